"""The fast path's table (`premath/data/cli-fast-path.json`), derived from the click declarations.

click stays the one definition of every option: this module reads the hot commands' click
commands and writes what the fast path (`cli/_fast.py`) needs to parse their arguments without
importing click: each option's spellings, whether it takes a value, repeats, is required, its
type as far as the fast path checks it, and the value click gives when it is absent. A
parameter the table cannot describe exactly (an unknown type, a callback other than
`discovered_default`, an environment variable) is marked so that giving it sends the command to
click; a command that cannot be described at all (a group option, a prompt) is left out, and
click runs it as before.

Regenerate after changing a hot command's options: `mise run cli-fast-path` (a test fails
while the file is stale; until then an unknown option simply goes to click).
"""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import click
import orjson

from premath.cli._options import IntRange, Priority, discovered_default

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

HOT_COMMANDS: tuple[tuple[str, ...], ...] = (
    ("harness-session", "read"),
    ("harness-session", "write"),
    ("harness-session", "bootstrap"),
    ("harness-trajectory", "append"),
    ("harness-trajectory", "query"),
    ("harness-join-check",),
    ("issue", "ready"),
    ("issue", "list"),
    ("issue", "show"),
    ("issue", "claim-next"),
    ("issue", "update"),
)
"""What agents call in loops; each needs its body in `cli/hot/` (a click-free module)."""

SPEC_PATH = Path(__file__).resolve().parents[1] / "data" / "cli-fast-path.json"
HOT_PACKAGE = "premath.cli.hot."
SCHEMA = 1


class NotDescribable(Exception):
    """The command needs click to parse it (the reason is the message)."""


def body_signature(body: Any) -> list[str]:
    """The names a body takes, `**` last when it takes any keyword: the fast path compares
    them with the table's before calling it (a body changed without regenerating goes to
    click)."""
    code = body.__code__
    names = list(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])
    if code.co_flags & inspect.CO_VARKEYWORDS:
        names.append("**")
    return names


def _type_of(param: click.Parameter) -> list[Any]:
    kind = param.type
    if type(kind) is click.types.StringParamType:
        return ["str"]
    choices = kind.choices if isinstance(kind, click.Choice) and kind.case_sensitive else None
    if choices is not None and all(isinstance(choice, str) for choice in choices):
        return ["choice", list(choices)]
    if type(kind) is click.types.IntParamType:
        return ["int", None, None]
    if isinstance(kind, click.IntRange) and type(kind) in (click.IntRange, IntRange):
        open_or_clamped = kind.clamp or kind.min_open or kind.max_open
        return ["click"] if open_or_clamped else ["int", kind.min, kind.max]
    if type(kind) is Priority:  # its plain decimal forms are the i32 range's
        return ["int", -(2**31), 2**31 - 1]
    if type(kind).__name__ == "Usize" and type(kind).__module__ == "premath.cli.harness_trajectory":
        return ["usize"]
    return ["click"]


def _sample(param: click.Parameter) -> str:
    """A value click accepts for a required parameter (to learn the others' defaults)."""
    kind = _type_of(param)
    if kind[0] == "str":
        return "x"
    if kind[0] == "choice":
        return str(kind[1][0])
    if kind[0] in ("int", "usize"):
        return str(kind[1] if kind[0] == "int" and kind[1] is not None else 0)
    raise NotDescribable(f"required {param.name} has a type the table cannot describe")


def _describe_param(param: click.Parameter, absent: dict[str, Any]) -> dict[str, Any]:
    if isinstance(param, click.Option):
        if param.secondary_opts or param.count or param.prompt or param.is_eager:
            raise NotDescribable(f"option {param.name} is a switch pair, counter, prompt or eager")
        plain_flag = param.flag_value is True or type(param.flag_value).__name__ == "Sentinel"
        if param.is_flag and not (plain_flag and isinstance(param.type, click.types.BoolParamType)):
            raise NotDescribable(f"flag {param.name} has a flag value of its own")
        if param.deprecated:
            raise NotDescribable(f"option {param.name} is deprecated (click warns)")
    elif param.nargs != 1 or not param.required:
        raise NotDescribable(f"argument {param.name} is optional or takes several values")
    if param.nargs != 1:
        raise NotDescribable(f"{param.name} takes several values at once")
    callback = param.callback
    if callback is not None and callback is not discovered_default:
        raise NotDescribable(f"{param.name} has a callback the fast path does not run")
    flag = isinstance(param, click.Option) and param.is_flag
    kind = ["flag"] if flag else _type_of(param)
    if param.envvar:
        kind = ["click"]  # given or not, click reads the variable: describe it as click's
        if not param.required:
            raise NotDescribable(f"{param.name} reads an environment variable")
    return {
        "name": param.name if param.expose_value else None,
        "opts": list(param.opts) if isinstance(param, click.Option) else [],
        "type": kind,
        "multiple": bool(getattr(param, "multiple", False)),
        "required": bool(param.required),
        "absent": None if param.required or not param.expose_value else absent[param.name or ""],
        "rebase": callback is discovered_default,
    }


@contextlib.contextmanager
def _scratch_folder() -> Iterator[None]:
    """A working folder with no project above it, so `discovered_default` keeps defaults."""
    previous = os.getcwd()
    saved = os.environ.pop("PREMATH_DIR", None)
    with tempfile.TemporaryDirectory() as folder:
        os.chdir(folder)
        try:
            yield
        finally:
            os.chdir(previous)
            if saved is not None:
                os.environ["PREMATH_DIR"] = saved


def _absent_values(command: click.Command, name: str) -> dict[str, Any]:
    """What click passes for each parameter left out of the command line (required ones
    given a sample value)."""
    args: list[str] = []
    for param in command.params:
        if not param.required:
            continue
        if isinstance(param, click.Option):
            args += [param.opts[0], _sample(param)]
        else:
            args.append(_sample(param))
    with _scratch_folder():
        ctx = command.make_context(name, args)
    values = dict(ctx.params)
    for value in values.values():
        if not isinstance(value, str | int | bool | tuple | type(None)) or value == ("x",):
            raise NotDescribable(f"a default click gives ({value!r}) is not plain data")
    return values


def describe_command(command: click.Command, name: str) -> dict[str, Any]:
    """One command's entry in the table, or NotDescribable."""
    settings = command.context_settings
    if set(settings) - {"help_option_names"} or not isinstance(command, click.Command):
        raise NotDescribable("the command has context settings the fast path does not honour")
    if type(command).__name__ != "StrictCommand":
        raise NotDescribable("the command is not a StrictCommand (repeats are not refused)")
    callback = command.callback
    if callback is None:
        raise NotDescribable("the command has no callback")
    body = inspect.unwrap(callback)
    if not body.__module__.startswith(HOT_PACKAGE):
        raise NotDescribable(f"its body {body.__module__}.{body.__name__} is not in cli/hot/")
    absent = _absent_values(command, name)
    return {
        "body": f"{body.__module__}:{body.__qualname__}",
        "app": callback is not body,
        "signature": body_signature(body),
        "params": [_describe_param(param, absent) for param in command.params],
    }


def build_spec() -> dict[str, Any]:
    """The table for `HOT_COMMANDS`, from the click tree as it is now."""
    from premath.cli import cli

    commands: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    ctx = click.Context(cli)
    for path in HOT_COMMANDS:
        key = " ".join(path)
        command: click.Command | None = cli
        try:
            for depth, name in enumerate(path):
                assert isinstance(command, click.Group)
                if depth and any(p.name != "help" for p in command.params):
                    raise NotDescribable(f"group {path[depth - 1]} has options of its own")
                command = command.get_command(ctx, name)
                if command is None:
                    raise NotDescribable("no such command")
            assert command is not None
            commands[key] = describe_command(command, f"premath {key}")
        except NotDescribable as exc:
            skipped[key] = str(exc)
    return {"schema": SCHEMA, "commands": commands, "clickOnly": skipped}


def spec_bytes() -> bytes:
    return orjson.dumps(build_spec(), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


def main() -> int:
    """`python -m premath.cli._fast_spec [--check]`: write the table, or check it is current."""
    fresh = spec_bytes()
    if sys.argv[1:] == ["--check"]:
        current = SPEC_PATH.read_bytes() if SPEC_PATH.exists() else b""
        if current != fresh:
            sys.stderr.write(f"{SPEC_PATH} is stale: run `mise run cli-fast-path`\n")
            return 1
        return 0
    SPEC_PATH.write_bytes(fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
