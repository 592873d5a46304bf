"""`premath.multithread.throughput.v1`: the KPI report's kind and its documented defaults."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

KPI_SCHEMA: Final = 1
KPI_KIND: Final = "premath.multithread.throughput.v1"

DEFAULT_WINDOW_HOURS: Final = 24
DEFAULT_TARGET_KPI: Final = 0.8
DEFAULT_ROLLBACK_KPI: Final = 0.4
DEFAULT_MIN_SAMPLE_ROWS: Final = 3
