"""Waiting on real processes a test started (or that its children started)."""

import os
import time
from pathlib import Path


def wait_dead(pid: int, within_s: float = 5.0) -> bool:
    """True once `pid` no longer exists (a zombie counts as gone: it runs nothing)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            status = Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0]
        except FileNotFoundError:
            return True
        except OSError:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            status = "R"
        if status == "Z":
            return True
        time.sleep(0.02)
    return False


def read_pid(path: Path, within_s: float = 5.0) -> int:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        text = path.read_text() if path.exists() else ""
        if text.strip():
            return int(text)
        time.sleep(0.01)
    raise AssertionError(f"{path} never got a pid")
