"""Options shared by many commands."""

from collections.abc import Callable
from typing import Any, TypeVar

import click
from click.core import ParameterSource

F = TypeVar("F", bound=Callable[..., Any])

json_option = click.option(
    "--json", "json_output", is_flag=True, expose_value=False, help="Output as JSON"
)


def discovered_default(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Option callback: a path left at its default lives under the project root found by
    walking up to the nearest `.premath/` (premath.store.root); a given path is kept."""
    if value is None or param.name is None:
        return value
    if ctx.get_parameter_source(param.name) is not ParameterSource.DEFAULT:
        return value
    from premath.store.root import rebase

    return rebase(value)


def path_option(default: str, help_text: str, alias: str) -> Callable[[F], F]:
    """`--path` (the reference's spelling) and the loop's spelling of the same file."""
    return click.option(
        "--path",
        alias,
        "path",
        default=default,
        show_default=True,
        help=help_text,
        callback=discovered_default,
    )


def stacked(*decorators: Callable[[Any], Any]) -> Callable[[Callable[..., Any]], Any]:
    """Decorators written as a stack of `@` lines, top first: `stacked(a, b)(f)` is `a(b(f))`.

    How a group declares a hot command whose body lives in `cli/hot/` (free of click)."""

    def apply(body: Callable[..., Any]) -> Any:
        for decorator in reversed(decorators):
            body = decorator(body)
        return body

    return apply
