"""How the command-anchor scripts under tools/ run premath (they are thin: argument spelling and
path bases are theirs, the work is premath's own commands)."""

import importlib.util
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

REPO_ROOT = Path(__file__).resolve().parents[1]
"""The repository the scripts sit in: the reference's default `--repo-root`."""


def premath_argv() -> list[str]:
    """`PREMATH_BIN` (split shell-style, as the reference's loop reads it); else this
    interpreter's premath package; else `premath` on PATH."""
    configured = os.environ.get("PREMATH_BIN", "").strip()
    if configured:
        return shlex.split(configured)
    if importlib.util.find_spec("premath") is not None:
        return [sys.executable, "-m", "premath"]
    return ["premath"]


def exec_premath(args: Sequence[str], cwd: Path | None = None) -> NoReturn:
    """Replace this process with premath: its output and exit code are the script's."""
    if cwd is not None:
        os.chdir(cwd)
    argv = [*premath_argv(), *args]
    sys.stdout.flush()
    os.execvp(argv[0], argv)
