"""A one-line progress bar on stderr (on a terminal unless asked): stdout stays the document.

Each frame returns to the line's start and overwrites the last one: it is padded to the last
frame's length, so a shorter frame (the last one drops its `eta`) leaves no stray characters,
and it stays narrower than the terminal, so it never wraps onto a second line.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from premath.models.trial import TrialRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO

_WIDTH = 28
_MIN_BAR = 8
_MIN_INTERVAL_S = 0.1


class Progress:
    def __init__(self, total: int, done: int, enabled: bool, stream: TextIO | None = None):
        self.total = total
        self.done = done
        self.enabled = enabled
        self.counts = {"success": 0, "failure": 0, "error": 0}
        self._stream = stream or sys.stderr
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._run_now = 0
        self._last_draw = 0.0
        self._last_length = 0

    def record(self, record: TrialRecord) -> None:
        with self._lock:
            if record.final:
                self.done += 1
                self._run_now += 1
                self.counts[record.outcome] += 1
            self._draw(force=self.done == self.total)

    def start(self) -> None:
        with self._lock:
            self._draw(force=True)

    def _draw(self, force: bool) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last_draw < _MIN_INTERVAL_S:
            return
        self._last_draw = now
        eta = ""
        if self._run_now and self.done < self.total:
            per_trial = (now - self._started) / self._run_now
            remaining = round(per_trial * (self.total - self.done))
            eta = f"  eta {remaining // 60}:{remaining % 60:02d}"
        counts = self.counts
        text = (
            f"{self.done}/{self.total}  ok {counts['success']}  "
            f"fail {counts['failure']}  err {counts['error']}{eta}"
        )
        bar_width = min(_WIDTH, self._columns() - 1 - len(text) - 3)
        frame = text
        if bar_width >= _MIN_BAR:
            filled = bar_width * self.done // max(self.total, 1)
            frame = f"[{'#' * filled}{'.' * (bar_width - filled)}] {text}"
        padding = " " * max(0, self._last_length - len(frame))
        self._last_length = len(frame)
        self._stream.write(f"\r{frame}{padding}")
        self._stream.flush()

    def _columns(self) -> int:
        """The width of the terminal the bar is drawn on (80 when it is not a terminal)."""
        try:
            return os.get_terminal_size(self._stream.fileno()).columns
        except (AttributeError, OSError, ValueError):
            return 80

    def finish(self) -> None:
        with self._lock:
            if self.enabled:
                self._draw(force=True)
                self._stream.write("\n")
                self._stream.flush()
