"""Options shared by many commands."""

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

json_option = click.option(
    "--json", "json_output", is_flag=True, expose_value=False, help="Output as JSON"
)


def path_option(default: str, help_text: str) -> Callable[[F], F]:
    return click.option("--path", default=default, show_default=True, help=help_text)
