"""Options shared by many commands."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click
from click.core import ParameterSource

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


json_option = click.option(
    "--json", "json_output", is_flag=True, expose_value=False, help="Output as JSON"
)

PROJECT_ROOT = "the nearest folder above holding .premath/, else the git root"
"""Where default paths live (premath.store.root), as help texts say it."""


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
    return click.option(
        *param_decls,
        default=default,
        help=f"{help_text} [default: {default} in {PROJECT_ROOT}]",
        callback=discovered_default,
    )


def path_option(default: str, help_text: str, alias: str) -> Callable[[F], F]:
    """`--path` (the reference's spelling) and the loop's spelling of the same file."""
    return project_path_option("--path", alias, "path", default=default, help_text=help_text)


def stacked(*decorators: Callable[[Any], Any]) -> Callable[[Callable[..., Any]], Any]:
    """Decorators written as a stack of `@` lines, top first: `stacked(a, b)(f)` is `a(b(f))`.

    How a group declares a hot command whose body lives in `cli/hot/` (free of click)."""

    def apply(body: Callable[..., Any]) -> Any:
        for decorator in reversed(decorators):
            body = decorator(body)
        return body

    return apply
