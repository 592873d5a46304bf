"""What the `issue` and `dep` groups share: the `--issues` option and their text layout."""

from typing import Any

import click

from premath.cli._options import discovered_default
from premath.models.vocabulary import DEFAULT_ISSUES_PATH

issues_option = click.option(
    "--issues",
    "--issues-path",
    "issues",
    default=DEFAULT_ISSUES_PATH,
    show_default=True,
    help="Issues JSONL path [default: under the nearest folder above holding .premath/]",
    callback=discovered_default,
)


def lines_text(title: str, rows: list[tuple[str, Any]], items: list[str] | None = None) -> str:
    """The reference's text layout: a title, `  Label: value` rows, then `  - item` lines."""
    lines = [title, *(f"  {label}: {value}" for label, value in rows)]
    lines.extend(f"  - {item}" for item in items or ())
    return "\n".join(lines)
