"""Run the CLI in-process through its real exit point, and as a real subprocess."""

import importlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import orjson
from click.testing import CliRunner

from premath.cli import COMMAND_GROUPS, cli
from premath.cli._declaration import CliCommand
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


def hot_commands() -> dict[str, CliCommand]:
    """Every command declared hot, by its path (`"issue ready"`), from its group's declarations."""
    found: dict[str, CliCommand] = {}
    for group in COMMAND_GROUPS.values():
        for name in group.declarations:
            module = importlib.import_module(name)
            for value in vars(module).values():
                if isinstance(value, CliCommand) and value.hot:
                    found[" ".join(value.path)] = value
    return found


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


HEAVY_MODULES = ("pydantic", "yaml")


def heavy_imports_of(argv: tuple[str, ...], cwd: Path) -> tuple[int, list[str]]:
    """Run `premath ARGV` in a fresh interpreter; its exit code and the heavy modules it loaded."""
    probe = (
        "import sys\n"
        "from premath.cli import cli\n"
        "try:\n"
        f"    cli.main({list(argv)!r})\n"
        "except SystemExit as exit:\n"
        "    code = exit.code\n"
        f"print(code, sorted(m for m in {HEAVY_MODULES!r} if m in sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=cwd, capture_output=True, text=True, check=False
    )
    code, _, modules = proc.stdout.strip().splitlines()[-1].partition(" ")
    return int(code), orjson.loads(modules.replace("'", '"'))


def every_command() -> list[tuple[tuple[str, ...], click.Command]]:
    """Every command of the CLI, groups included, by its path (`()` is `premath` itself)."""
    context = click.Context(cli)
    found: list[tuple[tuple[str, ...], click.Command]] = []
    pending: list[tuple[tuple[str, ...], click.Command]] = [((), cli)]
    while pending:
        path, command = pending.pop()
        found.append((path, command))
        if isinstance(command, click.Group):
            for name in command.list_commands(context):
                sub = command.get_command(context, name)
                assert sub is not None
                pending.append(((*path, name), sub))
    return sorted(found, key=lambda item: item[0])
