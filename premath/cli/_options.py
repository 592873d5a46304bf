"""Options shared by many commands, and the click command built from a declaration."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from premath.cli._declaration import (
    CHOICE,
    FLAG,
    INT,
    JSON,
    PRIORITY,
    PROJECT_ROOT,
    USIZE,
    CliCommand,
    CliParam,
    path_param,
    project_path,
)
from premath.cli._root import CONTEXT_SETTINGS, StrictCommand, pass_app

F = TypeVar("F", bound=Callable[..., Any])


class IntRange(click.IntRange):
    """click's IntRange, named `integer` in errors and help (`'x' is not a valid integer.`,
    not `... valid integer range.`)."""

    name = "integer"


class FloatRange(click.FloatRange):
    """click's FloatRange, named `float` in errors and help."""

    name = "float"


class Priority(click.ParamType[int]):
    """An issue priority: any whole number that fits in 32 bits (the reference's i32), lower
    first; said in words, not as click's `-2147483648<=x<=2147483647` range."""

    name = "integer"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        try:
            number = int(str(value).strip(), 10)
        except ValueError:
            self.fail(
                f"{value!r} is not a priority: give a whole number, lower is more urgent "
                "(0 is the highest, 2 the default), e.g. --priority 0",
                param,
                ctx,
            )
        if not -(2**31) <= number < 2**31:
            self.fail(f"{value} is out of range: a priority fits in 32 bits", param, ctx)
        return number


class Usize(click.ParamType[int, Any]):
    """clap's `usize`: ASCII digits (an optional `+`), at most 2^64-1; `1_000`, ` 5`, `٣` refused.

    click's INT accepts what Python's `int()` does (underscores, spaces, other scripts' digits).
    """

    name = "integer"
    MAX = 2**64 - 1

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        digits = value[1:] if value.startswith("+") else value
        valid = digits.isascii() and digits.isdigit() and len(digits.lstrip("0")) <= 20
        if not valid or int(digits) > self.MAX:
            self.fail(f"{value!r} is not a non-negative integer (at most {self.MAX})", param, ctx)
        return int(digits)


__all__ = ["PROJECT_ROOT"]  # help texts that say it outside an option (cli/instruction.py)


def discovered_default(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Option callback: a path left at its default lives under the project root found by
    walking up to the nearest `.premath/` (premath.store.root); a given path is kept."""
    if value is None or param.name is None:
        return value
    if ctx.get_parameter_source(param.name) is not ParameterSource.DEFAULT:
        return value
    from premath.store.root import rebase

    return rebase(value)


def project_path_option(*param_decls: str, default: str, help_text: str) -> Callable[[F], F]:
    """A path option whose default lives in the project, said once in its help."""
    return click_param(project_path(*param_decls, default=default, help_text=help_text))


def path_option(default: str, help_text: str, alias: str) -> Callable[[F], F]:
    """`--path` (the reference's spelling) and the loop's spelling of the same file."""
    return click_param(path_param(default, help_text, alias))


def _click_type(param: CliParam) -> Any:
    """The click type checking what the declaration's kind says (None: click's STRING)."""
    if param.kind == CHOICE:
        return click.Choice(param.choices)
    if param.kind == INT:
        bounded = param.low is not None or param.high is not None
        return IntRange(min=param.low, max=param.high) if bounded else click.INT
    if param.kind == USIZE:
        return Usize()
    if param.kind == PRIORITY:
        return Priority()
    return None


def click_param(param: CliParam) -> Callable[[F], F]:
    """The click option or argument a declared parameter stands for (only the settings it
    sets are passed, so click's own defaults stay click's)."""
    settings: dict[str, Any] = {"is_flag": True} if param.kind == FLAG else {}
    kind = _click_type(param)
    given = {
        "type": kind,
        "default": param.default,
        "help": param.help,
        "metavar": param.metavar,
        "callback": discovered_default if param.project_default else None,
    }
    settings.update((key, value) for key, value in given.items() if value is not None)
    settings.update(
        (key, True)
        for key, value in (
            ("required", param.required and bool(param.opts)),
            ("multiple", param.multiple),
            ("show_default", param.show_default),
        )
        if value
    )
    if not param.expose:
        settings["expose_value"] = False
    if not param.opts:
        return click.argument(param.name, **settings)
    return click.option(*param.opts, param.name, **settings)


def click_command(declared: CliCommand, group: click.Group | None = None) -> click.Command:
    """The click command of a declaration: a subcommand of `group`, else a top-level one."""
    callback = pass_app(declared.body) if declared.app else declared.body
    for param in reversed(declared.params):
        callback = click_param(param)(callback)
    name = declared.path[-1]
    if group is not None:
        return group.command(name)(callback)
    return click.command(name, cls=StrictCommand, context_settings=CONTEXT_SETTINGS)(callback)


json_option = click_param(JSON)
