"""The merge queue's record on an issue: the `[harness-merge-queue]` note a worker merges into
the issue's notes when the queue has decided (specs/remote-workers.md "Merge queue"), and how a
reader (the dashboard's issue detail) gets the latest verdict back from it."""

from typing import Any, Literal

QUEUE_NOTE_HEADER = "[harness-merge-queue]"
QueueState = Literal["queued", "merging", "verifying", "landed", "failed"]


def latest_queue_record(notes: Any) -> dict[str, Any] | None:
    """The last `[harness-merge-queue]` block of an issue's notes (blank-line separated) as
    `state`, `integrationBranch`, `integrationCommit`, `failureClass`, `conflictPaths`; None
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
    commit = fields.get("integrationCommit")
    return {
        "state": fields.get("state"),
        "integrationBranch": fields.get("integrationBranch"),
        "integrationCommit": None if commit in (None, "none") else commit,
        "failureClass": fields.get("failureClass"),
        "conflictPaths": paths,
    }
