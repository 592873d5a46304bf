"""What the `issue` and `dep` groups share: the `--issues` option and their text layout."""

from typing import Any

from premath.cli._options import project_path_option
from premath.models.vocabulary import DEFAULT_ISSUES_PATH

issues_option = project_path_option(
    "--issues",
    "--issues-path",
    "issues",
    default=DEFAULT_ISSUES_PATH,
    help_text="Issues JSONL path",
)


def lines_text(title: str, rows: list[tuple[str, Any]], items: list[str] | None = None) -> str:
    """The reference's text layout: a title, `  Label: value` rows, then `  - item` lines."""
    lines = [title, *(f"  {label}: {value}" for label, value in rows)]
    lines.extend(f"  - {item}" for item in items or ())
    return "\n".join(lines)
