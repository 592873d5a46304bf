"""Structured access log: one JSON object a line, for tool calls and HTTP requests.

A line names what happened and who asked (the caller's token id, never the token), how it ended
and how long it took. Tool arguments are never logged: they may hold paths, titles or notes a
caller considers private; a tool error contributes only its failure class.
"""

from __future__ import annotations

import re
import sys

import orjson

from premath.clock import SystemClock
from premath.timefmt import epoch_nanos, format_autosi_z

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Any

_FAILURE_CLASS = re.compile(r"^\[failureClass=([^\]]+)\]")


def failure_class(message: str) -> str | None:
    """The `[failureClass=...]` tag a tool error starts with, if any."""
    match = _FAILURE_CLASS.match(message)
    return match.group(1) if match else None


class AccessLog:
    """Writes access lines to `stream` (None: logging off). Used from the event loop only."""

    def __init__(self, stream: IO[str] | None) -> None:
        self.stream = stream
        self.clock = SystemClock()

    def write(self, event: str, **fields: Any) -> None:
        if self.stream is None:
            return
        line = {"time": format_autosi_z(epoch_nanos(self.clock.now())), "event": event, **fields}
        try:
            self.stream.write(orjson.dumps(line).decode("utf-8") + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            return  # a closed or full log must not fail a call


def open_access_log(target: str | None) -> AccessLog:
    """`-` is stderr, None no log, anything else a file appended to (line-buffered)."""
    if target is None:
        return AccessLog(None)
    if target == "-":
        return AccessLog(sys.stderr)
    return AccessLog(open(target, "a", encoding="utf-8", buffering=1))
