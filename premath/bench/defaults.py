"""Defaults of `premath bench`, apart so the CLI can show them without importing the runner."""

from __future__ import annotations

DEFAULT_TIMEOUT_S = 1800.0
"""Seconds a harness may run."""
DEFAULT_OUTPUT_CAP = 10 << 20
"""Bytes of each output stream kept in raw/."""
DEFAULT_SANDBOX_BACKEND = "local"
DEFAULT_TOOL_TIMEOUT_S = 600.0
"""Seconds one `bench tool` command may run."""
DEFAULT_TOOL_OUTPUT_CAP = 10 << 20
