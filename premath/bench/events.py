"""The run's event stream `raw/events.jsonl`: one JSON object per line, appended under a lock.

Two kinds of writer share it while a run is live: `premath bench run` (lifecycle) and the
harness's calls to `premath bench tool` / `premath bench record`; whole-line locked appends keep
their rows apart. Readers skip what they cannot use, so a crashed run still exports.
specs/bench-run.md "Events".
"""

from __future__ import annotations

import os
from datetime import UTC, datetime

from premath.store.canonical import row_bytes
from premath.store.jsonl import append_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

EventKind = str


def event_time(moment: datetime) -> str:
    """`2026-03-01T10:00:00.123Z`: millisecond UTC stamps, which ATIF timestamps accept."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def append_event(
    path: str | os.PathLike[str],
    kind: EventKind,
    at: datetime,
    lock_timeout_s: float,
    **fields: Any,
) -> dict[str, Any]:
    """Append one event row; returns it."""
    event = {"kind": kind, "at": event_time(at), **fields}
    append_line(path, row_bytes(event), timeout_s=lock_timeout_s)
    return event
