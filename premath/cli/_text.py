"""The reference's text layout for command output, free of click (the fast path uses it)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def lines_text(title: str, rows: list[tuple[str, Any]], items: list[str] | None = None) -> str:
    """The reference's text layout: a title, `  Label: value` rows, then `  - item` lines."""
    lines = [title, *(f"  {label}: {value}" for label, value in rows)]
    lines.extend(f"  - {item}" for item in items or ())
    return "\n".join(lines)
