"""The merge queue's record on an issue (specs/remote-workers.md "Merge queue"): the
`[harness-merge-queue]` note a worker merges into the issue's notes when the queue has decided,
the transient state (queued, merging, verifying) its lease renewals carry into the issue's
`metadata.premathMergeQueue` while the queue works, and how a reader (the dashboard's issue
detail) gets the current one back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from premath.errors import InputInvalid

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal

    QueueState = Literal["queued", "merging", "verifying", "landed", "failed"]


QUEUE_NOTE_HEADER = "[harness-merge-queue]"
TRANSIENT_STATES: tuple[QueueState, ...] = ("queued", "merging", "verifying")
QUEUE_STATE_KEY = "premathMergeQueue"
"""The metadata key of the transient state: written by the holder's renewals, removed by its
finish (whose note then holds the verdict)."""
_TRANSIENT_FIELDS = ("state", "branch", "integrationBranch", "onto", "step")
_MAX_FIELD_CHARS = 512


def queue_state_lines(record: Mapping[str, str]) -> list[str]:
    """A transient state as `key: value` lines, as a renewal sends it (the note's format)."""
    return [f"{key}: {record[key]}" for key in _TRANSIENT_FIELDS if key in record]


def parse_queue_state(lines: Sequence[str]) -> dict[str, str]:
    """The transient state of a renewal's `key: value` lines; InputInvalid names what is wrong
    (an unknown key, a state that is no transient one, an oversized value)."""
    record: dict[str, str] = {}
    for line in lines:
        key, sep, value = line.partition(": ")
        if not sep or key not in _TRANSIENT_FIELDS or len(value) > _MAX_FIELD_CHARS:
            raise InputInvalid(
                f"mergeQueue line {line[:80]!r} is not `key: value` with a key among "
                f"{', '.join(_TRANSIENT_FIELDS)} (values up to {_MAX_FIELD_CHARS} characters)"
            )
        record[key] = value
    if record.get("state") not in TRANSIENT_STATES:
        raise InputInvalid(
            f"mergeQueue needs `state: ` one of {', '.join(TRANSIENT_STATES)} "
            "(the verdict is the finish's note)"
        )
    return record


def current_queue_record(row: Mapping[str, Any]) -> dict[str, Any] | None:
    """What the queue is doing with the issue now: the transient state its holder reported
    under the lease it still holds, else the latest verdict of its notes (None: never queued)."""
    metadata = row.get("metadata")
    record = metadata.get(QUEUE_STATE_KEY) if isinstance(metadata, dict) else None
    lease = row.get("lease")
    if (
        isinstance(record, dict)
        and isinstance(lease, dict)
        and record.get("leaseId") == lease.get("lease_id")
        and record.get("state") in TRANSIENT_STATES
    ):
        return {
            "state": record["state"],
            "integrationBranch": record.get("integrationBranch"),
            "integrationCommit": None,
            "failureClass": None,
            "conflictPaths": [],
            "branch": record.get("branch"),
            "onto": record.get("onto"),
        }
    return latest_queue_record(row.get("notes"))


def latest_queue_record(notes: Any) -> dict[str, Any] | None:
    """The last `[harness-merge-queue]` block of an issue's notes (blank-line separated) as
    `state`, `integrationBranch`, `integrationCommit`, `failureClass`, `conflictPaths`,
    `branch`, `onto`; None
    when the queue never decided on the issue."""
    if not isinstance(notes, str) or QUEUE_NOTE_HEADER not in notes:
        return None
    blocks = [block for block in notes.split("\n\n") if block.startswith(QUEUE_NOTE_HEADER)]
    if not blocks:
        return None
    fields: dict[str, str] = {}
    paths: list[str] = []
    for line in blocks[-1].splitlines()[1:]:
        key, sep, value = line.partition(": ")
        if not sep:
            continue
        if key == "conflictPath":
            paths.append(value)
        else:
            fields.setdefault(key, value)
    commit, onto = fields.get("integrationCommit"), fields.get("onto")
    return {
        "state": fields.get("state"),
        "integrationBranch": fields.get("integrationBranch"),
        "integrationCommit": None if commit in (None, "none") else commit,
        "failureClass": fields.get("failureClass"),
        "conflictPaths": paths,
        "branch": fields.get("branch"),
        "onto": None if onto in (None, "none") else onto,
    }
