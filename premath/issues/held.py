"""What only the holder of an issue's lease may do to it: close it, block it or give it back.

Closing or blocking an issue is only right while the worker that claimed it still holds the
lease it claimed under: another worker may have reclaimed it after the lease went stale. `issue
update` does not check that, so the loop (and the MCP tool `issue_lease_finish`, specs/
remote-workers.md) finish an issue here: the holder check and the change happen in one
`mutate_store` call, under the store lock. A lease that went stale but that nobody reclaimed is
still the holder's (nobody else can hold it).

A finish may merge a note into the issue's notes (blank-line separated, idempotent, as the
reference's mark_blocked merge), record witness refs (`metadata.premathWitnessRefs`: the
delivered commit of a remote worker, sorted and deduplicated) and, when it blocks the issue,
discover a follow-up issue (`discovered-from` the held one) in the same write; the note then
ends with `discoveredIssue: <id>`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from premath.errors import InputInvalid
from premath.issues.holder import holder_mismatch
from premath.issues.lifecycle import NewIssue, new_issue, put_field, set_status, set_text
from premath.lean import NamedTuple, datetime
from premath.models.issue_row import sort_metadata
from premath.models.merge_queue import QUEUE_STATE_KEY
from premath.store.issues_file import Changes, IssueMap, WarmStores, mutate_store
from premath.timefmt import epoch_nanos, format_autosi_z

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal

    from premath.models.issue_row import IssueRow

    FinishStatus = Literal["closed", "blocked", "open"]


FINISH_STATUSES: tuple[FinishStatus, ...] = ("closed", "blocked", "open")
WITNESS_REFS_KEY = "premathWitnessRefs"
"""The metadata key a finish records its witness refs under."""

# holder problem -> the reference's lease failure class (what the MCP tool tags its refusal with)
_PROBLEM_CLASSES = (
    ("issue is missing", "lease_not_found"),
    ("issue is already closed", "lease_issue_closed"),
    ("issue has no lease", "lease_missing"),
    ("lease is held by", "lease_owner_mismatch"),
    ("lease id changed", "lease_id_mismatch"),
)


class Discovery(NamedTuple):
    """A follow-up issue to discover from the held one as it is blocked."""

    title: str
    description: str


class Finished(NamedTuple):
    applied: bool
    reason: str = ""
    """Why it was not applied (empty when it was)."""
    created_issue_id: str | None = None

    @property
    def failure_class(self) -> str:
        """The lease failure class of a refusal (`lease_owner_mismatch`, ...)."""
        return next((klass for lead, klass in _PROBLEM_CLASSES if self.reason.startswith(lead)), "")


def holder_problem(row: IssueRow | None, worker_id: str, lease_id: str | None) -> str:
    """Empty when `worker_id` holds the issue under `lease_id`; else what is wrong."""
    if row is None:
        return "issue is missing from issue memory"
    if row["status"] == "closed":
        return "issue is already closed"
    lease = row.get("lease")
    if lease is None:
        return "issue has no lease (released or never claimed)"
    mismatch = holder_mismatch(row["id"], lease, worker_id, lease_id, "finish")
    return "" if mismatch is None else mismatch[1]


def merge_notes(existing: str, note: str) -> str:
    """The reference's mark_blocked merge: idempotent, blank-line separated."""
    old, new = existing.strip(), note.strip()
    if not old:
        return new
    if new in old:
        return old
    return f"{old}\n\n{new}"


def merged_refs(row: IssueRow, refs: Sequence[str]) -> list[str]:
    """The row's recorded witness refs with `refs` added: trimmed, deduplicated, sorted."""
    metadata = row.get("metadata")
    known = metadata.get(WITNESS_REFS_KEY) if isinstance(metadata, dict) else None
    found = [ref for ref in known if isinstance(ref, str)] if isinstance(known, list) else []
    return sorted({ref.strip() for ref in (*found, *refs) if ref.strip()})


def _record_refs(row: IssueRow, refs: Sequence[str]) -> None:
    if not refs:
        return
    current = row.get("metadata")
    metadata: dict[str, Any] = dict(current) if isinstance(current, dict) else {}
    if current is not None and not isinstance(current, dict):
        metadata["legacyMetadata"] = current
    metadata[WITNESS_REFS_KEY] = merged_refs(row, refs)
    put_field(row, "metadata", sort_metadata(metadata))


def put_queue_state(row: IssueRow, record: Mapping[str, str] | None) -> None:
    """Record the merge queue's transient state under the lease the row holds (renewals of its
    holder, specs/remote-workers.md "Merge queue"); None removes it."""
    current = row.get("metadata")
    if record is None and not (isinstance(current, dict) and QUEUE_STATE_KEY in current):
        return
    metadata: dict[str, Any] = dict(current) if isinstance(current, dict) else {}
    if current is not None and not isinstance(current, dict):
        metadata["legacyMetadata"] = current
    if record is None:
        metadata.pop(QUEUE_STATE_KEY)
    else:
        lease: Any = row.get("lease") or {}
        metadata[QUEUE_STATE_KEY] = {**record, "leaseId": lease.get("lease_id", "")}
    if metadata:
        put_field(row, "metadata", sort_metadata(metadata))
    else:
        row.pop("metadata", None)


def check_finish(status: str, discover: Discovery | None) -> FinishStatus:
    """The finish's status, checked before anything is locked."""
    if status not in FINISH_STATUSES:
        raise InputInvalid(
            f"finish status must be one of {', '.join(FINISH_STATUSES)} (got {status!r})"
        )
    if discover is not None and status != "blocked":
        raise InputInvalid("a follow-up issue is discovered only when the issue is blocked")
    if discover is not None and not discover.title.strip():
        raise InputInvalid("the discovered issue's title is blank")
    return status


def finish_in(
    issues: IssueMap,
    issue_id: str,
    worker_id: str,
    lease_id: str | None,
    *,
    status: FinishStatus,
    now_text: str,
    note: str | None = None,
    witness_refs: Sequence[str] = (),
    discover: Discovery | None = None,
) -> tuple[Finished, list[IssueRow]]:
    """The finish on a loaded store (not yet saved): its outcome and the rows it changed, a
    discovered issue first."""
    row = issues.get(issue_id)
    problem = holder_problem(row, worker_id, lease_id)
    if problem or row is None:
        return Finished(False, problem), []
    changed: list[IssueRow] = []
    created = None
    if discover is not None:
        found = new_issue(
            issues, NewIssue(title=discover.title, description=discover.description), now_text
        )
        edge = {"issue_id": found["id"], "depends_on_id": issue_id, "type": "discovered-from"}
        put_field(found, "dependencies", [edge])
        created = found["id"]
        changed.append(found)
        note = f"{note or ''}\ndiscoveredIssue: {created}".lstrip("\n")
    if note is not None:
        set_text(row, "notes", merge_notes(row.get("notes", ""), note))
    if status == "open":
        row.pop("lease", None)
        row.pop("assignee", None)
    set_status(row, status, now_text)
    _record_refs(row, witness_refs)
    put_queue_state(row, None)  # the queue has decided: its verdict is in the note
    row["updated_at"] = now_text
    changed.append(row)
    return Finished(True, "", created), changed


def finish_held(
    path: str,
    issue_id: str,
    worker_id: str,
    lease_id: str | None,
    *,
    status: FinishStatus,
    now: datetime,
    timeout_s: float,
    note: str | None = None,
    witness_refs: Sequence[str] = (),
    discover: Discovery | None = None,
    on_row: Callable[[IssueRow], None] | None = None,
    warm: WarmStores | None = None,
) -> Finished:
    """`finish_in` under the store lock, saved when applied; `on_row` runs on each changed row
    before the save (the MCP write witness)."""
    check_finish(status, discover)
    now_text = format_autosi_z(epoch_nanos(now))

    def mutate(issues: IssueMap) -> tuple[Finished, Changes]:
        outcome, rows = finish_in(
            issues,
            issue_id,
            worker_id,
            lease_id,
            status=status,
            now_text=now_text,
            note=note,
            witness_refs=witness_refs,
            discover=discover,
        )
        for row in rows:
            if on_row is not None:
                on_row(row)
        return outcome, tuple(row["id"] for row in rows)

    return mutate_store(path, mutate, now=now, timeout_s=timeout_s, warm=warm)
