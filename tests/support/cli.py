"""Run the CLI in-process through its real exit point, and as a real subprocess."""

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from premath.cli import cli
from premath.cli._root import AppContext

SHARED = Path(__file__).resolve().parents[2].parent / "shared"


@dataclass(frozen=True)
class Outcome:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def json(self) -> Any:
        return orjson.loads(self.stdout)


def invoke(*args: str, app: AppContext | None = None, stdin: str | None = None) -> Outcome:
    """Run `premath ARGS` in-process (cwd is the caller's) and capture both streams apart."""
    result = CliRunner().invoke(cli, list(args), obj=app or AppContext(), input=stdin)
    return Outcome(result.exit_code, result.stdout, result.stderr)


def run_premath(
    *args: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    stdin: bytes = b"",
    timeout: float = 60,
) -> subprocess.CompletedProcess[bytes]:
    """Run `python -m premath ARGS` as a real process."""
    return subprocess.run(
        [sys.executable, "-m", "premath", *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        input=stdin,
        capture_output=True,
        timeout=timeout,
        check=False,
    )
