"""The lease-holder rule, once: does the caller hold the issue's lease as it says it does?

The owner is checked first, then the lease id; a check asked with None is not made. The
refusal's class is the reference's (`lease_owner_mismatch`, `lease_id_mismatch`); its words are
each face's, as data: the CLI's lease commands (issues/leases.py), the transport's lease
actions (transport/lease_actions.py, the reference's transport wording) and a holder's finish
(issues/held.py, worded for the worker that lost its lease). Kept light: the hot lease commands
load this module.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    from premath.models.issue_row import LeaseRow

    Mismatch = Literal["lease_owner_mismatch", "lease_id_mismatch"]
WORDS: dict[str, tuple[str, str]] = {
    "cli": (
        "lease owner mismatch on {issue}: expected={held}, got={given}",
        "lease id mismatch on {issue}: expected={held}, got={given}",
    ),
    "transport": (
        "lease owner mismatch for {issue} (expected={held}, got={given})",
        "lease_id mismatch for {issue} (expected={held}, got={given})",
    ),
    "finish": ("lease is held by {held}", "lease id changed to {held} (reclaimed)"),
}
"""Face -> (owner mismatch, lease id mismatch) texts."""


def holder_mismatch(
    issue_id: str, lease: LeaseRow, owner: str | None, lease_id: str | None, face: str
) -> tuple[Mismatch, str] | None:
    """(failure class, the face's text) when `owner` or `lease_id` is not the lease's."""
    owner_words, id_words = WORDS[face]
    if owner is not None and lease["owner"] != owner:
        return "lease_owner_mismatch", owner_words.format(
            issue=issue_id, held=lease["owner"], given=owner
        )
    if lease_id is not None and lease["lease_id"] != lease_id:
        held = lease["lease_id"]
        return "lease_id_mismatch", id_words.format(issue=issue_id, held=held, given=lease_id)
    return None
