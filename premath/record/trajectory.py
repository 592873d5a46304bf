"""The harness trajectory: append one step row, project the latest/failed/retry-needed steps.

specs/harness-trajectory.md is the contract. What we do better than the reference
(docs/divergences.md D2-1..D2-6): an append is one whole line under `<path>.lock`, never glued
onto an unterminated last line (D2-1); `query` streams the file, keeping `limit` rows and running
counts instead of every row (D2-2); a torn last line is skipped with a warning (D2-3); a malformed
line names the file and line (D2-4).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from premath.errors import InputInvalid, InvalidUsage, IoFailure
from premath.lean import datetime
from premath.models.trajectory import (
    PROJECTION_KIND,
    PROJECTION_MODE,
    STEP_SCHEMA,
    StepInvalid,
    normalize_step,
    parse_step,
)
from premath.models.vocabulary import STEP_KIND
from premath.store.canonical import row_bytes
from premath.store.documents import os_error_text
from premath.store.jsonl import append_line, report_torn_tail
from premath.timefmt import format_seconds_z

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.models.trajectory import QueryMode


def _require_utf8(values: Iterable[str | None]) -> None:
    """Arguments that are not UTF-8 (surrogate-escaped by Python) are a usage error, as in clap."""
    for value in values:
        if value is not None:
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidUsage("invalid UTF-8 was detected in one or more arguments") from None


def step_row(
    path: str | os.PathLike[str],
    *,
    step_id: str,
    action: str,
    result_class: str,
    issue_id: str | None = None,
    instruction_refs: Sequence[str] = (),
    witness_refs: Sequence[str] = (),
    lineage_refs: Sequence[str] = (),
    started_at: str | None = None,
    finished_at: str | None = None,
    now: datetime,
) -> dict[str, Any]:
    """The row `append_step` would write to `path` (checked and normalised), written nowhere:
    a remote worker ships it to the authority instead (harness/outbox.py)."""
    shown = os.fspath(path)
    fields: dict[str, Any] = {
        "schema": STEP_SCHEMA,
        "stepKind": STEP_KIND,
        "stepId": step_id,
        "issueId": issue_id,
        "action": action,
        "resultClass": result_class,
        "instructionRefs": list(instruction_refs),
        "witnessRefs": list(witness_refs),
        "lineageRefs": list(lineage_refs),
        "startedAt": started_at,
        "finishedAt": format_seconds_z(now) if finished_at is None else finished_at,
    }
    _require_utf8([step_id, action, result_class, issue_id, started_at, finished_at])
    _require_utf8([*instruction_refs, *witness_refs, *lineage_refs])
    try:
        return normalize_step(fields)
    except StepInvalid as exc:
        raise InputInvalid(
            f"failed to append harness trajectory row at {shown}: invalid trajectory row: {exc}"
        ) from None


def append_step(
    path: str | os.PathLike[str],
    *,
    now: datetime,
    lock_timeout: float,
    sync: bool = True,
    **fields: Any,
) -> dict[str, Any]:
    """Validate, normalise and durably append one step row (`step_row`'s keywords: step_id,
    action, result_class, issue_id, the three ref lists, started_at, finished_at); return the
    row as written.

    `finished_at` defaults to `now` (`YYYY-MM-DDTHH:MM:SSZ`, UTC); a given value is checked and
    stored verbatim after trimming, even when blank (then it is an error, as in the reference).
    A rejected row creates nothing. Raises InputInvalid, InvalidUsage, LockBusy or IoFailure.
    """
    shown = os.fspath(path)
    row = step_row(path, now=now, **fields)
    try:
        append_line(path, row_bytes(row), timeout_s=lock_timeout, sync=sync)
    except OSError as exc:
        raise IoFailure(
            f"failed to append harness trajectory row at {shown}: "
            f"failed to read/write trajectory: {os_error_text(exc)}"
        ) from None
    return row


def append_trajectory_row(
    path: str, *, now: datetime, lock_timeout: float, **fields: Any
) -> dict[str, Any]:
    """`harness-trajectory append`'s document: the action, the path as given, the row."""
    row = append_step(path, now=now, lock_timeout=lock_timeout, **fields)
    return {"action": "harness-trajectory.append", "path": path, "row": row}


def query_trajectory(path: str, mode: QueryMode, limit: int) -> dict[str, Any]:
    """`harness-trajectory query`'s projection of `path` (specs/harness-trajectory.md "Projection").

    Order: true instant of `finishedAt` descending, then stepId, then action (ascending,
    byte-wise), then file order. Counts cover every row whatever `mode` and `limit`. Memory holds
    `limit` rows, not the file; a large file is read again only from where the last query's
    index stopped (D26-3). Raises ArtifactInvalid or IoFailure naming the file and line.
    """
    from premath.record.trajectory_index import query_selection

    selection, rows = query_selection(path, mode, limit)
    if selection.torn_tail is not None:
        report_torn_tail(path, selection.torn_tail)
    items = [parse_step(row) for row in rows]
    return {
        "action": "harness-trajectory.query",
        "path": path,
        "projectionKind": PROJECTION_KIND,
        "mode": PROJECTION_MODE[mode],
        "count": len(items),
        "totalCount": selection.total,
        "failedCount": selection.failed,
        "retryNeededCount": selection.retry_needed,
        "items": items,
    }
