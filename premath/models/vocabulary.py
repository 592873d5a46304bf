"""Names the wire and the disk share across packages, spelled once.

Each is a value some file, document or option carries verbatim; modules import it from here
instead of re-spelling it, so a typo is a name error and a change is one edit.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final, Literal

    SessionState = Literal["active", "stopped"]

    GraphScope = Literal["active", "full"]

    EdgeView = Literal["execution", "gtd", "groupoid"]

    LeaseState = Literal[
        "missing_issue",
        "closed_with_lease",
        "released",
        "unleased",
        "stale",
        "contended",
        "active",
    ]
    """An issue's lease as the loop sees it (specs/harness-loop.md "Lease states"): `lease_state`
    of issue memory gives the last three for any row, the loop's handoff all of them."""


DEFAULT_ISSUES_PATH: Final = ".premath/issues.jsonl"
"""Issue memory, relative to the repository root (the reference's default)."""

STEP_KIND: Final = "premath.harness.step.v1"
"""The `stepKind` of every trajectory row."""

SESSION_STATES: tuple[SessionState, ...] = ("active", "stopped")

GRAPH_SCOPES: tuple[GraphScope, ...] = ("active", "full")
EDGE_VIEWS: tuple[EdgeView, ...] = ("execution", "gtd", "groupoid")


ESCALATION_TITLE_PREFIX: Final = "[HarnessEscalation]"
"""The title of an issue the loop files when retries are spent (specs/retry-policy.md
"Escalation"): work for a person, which claim-next leaves to people (divergence D30a-1)."""


ESCALATION_NOTE_HEAD: Final = "[harness-escalation]"
"""The first line of the note an escalation merges into the issue it blocks."""


def is_escalation_title(title: object) -> bool:
    return isinstance(title, str) and title.startswith(ESCALATION_TITLE_PREFIX)


def waits_for_person(status: object, title: object, notes: object) -> bool:
    """An escalation issue not closed, or an issue an escalation blocked (its note says so):
    the dashboard's "needs a person" lane and the live attention's `escalationIssueIds`."""
    if status == "closed":
        return False
    blocked_by_escalation = (
        status == "blocked" and isinstance(notes, str) and ESCALATION_NOTE_HEAD in notes
    )
    return is_escalation_title(title) or blocked_by_escalation


KNOWN_STATUSES = ("open", "in_progress", "blocked", "closed")
"""Issue statuses that carry meaning; the stored field is free-form, as in the reference."""
