"""The one source of wall-clock time, so tests can freeze it."""

from __future__ import annotations

import time

from premath.lean import UTC, datetime, timedelta

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol

    class Clock(Protocol):
        def now(self) -> datetime:
            """An aware UTC datetime."""


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class FrozenClock:
    """A clock that only moves when told to (tests)."""

    def __init__(self, at: datetime) -> None:
        self._at = at.astimezone(UTC)

    def now(self) -> datetime:
        return self._at

    def advance(self, seconds: float) -> None:
        self._at += timedelta(seconds=seconds)


def epoch_ns() -> int:
    """Wall-clock nanoseconds, for ids and stamps that need nanosecond precision."""
    return time.time_ns()
