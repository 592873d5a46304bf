"""Text for a person at a terminal: the width to fit, paragraphs wrapped, tables that fit.

`--json` output never goes through here: JSON is for machines and is printed whole. Text is
fitted to the terminal's width (`COLUMNS`, else the terminal, else 80 when piped), so a report
read in an 80-column terminal or a CI log has no line longer than the screen.
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Sequence

MIN_WIDTH = 40
"""Narrower terminals get this width: below it nothing useful fits anyway."""


def counted(count: int, noun: str) -> str:
    """`1 round`, `2 rounds`: a count with its noun in the right number (regular plurals)."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def terminal_width() -> int:
    """Columns of the terminal stdout writes to (`COLUMNS` first; 80 when not a terminal)."""
    return max(MIN_WIDTH, shutil.get_terminal_size((80, 24)).columns)


def wrap(text: str, width: int, indent: str = "", hang: str = "") -> list[str]:
    """`text` as lines of at most `width` columns: the first after `indent`, the rest after
    `indent + hang`. Words longer than a line (paths, digests) are cut: a line never overflows."""
    return textwrap.wrap(
        text,
        width=width,
        initial_indent=indent,
        subsequent_indent=indent + hang,
        break_on_hyphens=False,
    ) or [indent.rstrip()]


def _columns(header: Sequence[str], rows: Sequence[Sequence[str]], indices: list[int]) -> list[str]:
    widths = [max(len(row[i]) for row in (header, *rows)) for i in indices]
    lines = ["  ".join(header[i].ljust(w) for i, w in zip(indices, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += [
        "  ".join(row[i].ljust(w) for i, w in zip(indices, widths, strict=True)) for row in rows
    ]
    return [line.rstrip() for line in lines]


def fit_table(header: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> list[str]:
    """A table in at most `width` columns.

    Whole when it fits. Otherwise in parts, each repeating the first column (the row's name)
    with as many of the next columns as fit, separated by a blank line. When even the name and
    one more column do not fit, each row becomes a block of `column: value` lines.
    """

    def fits(indices: list[int]) -> bool:
        return max(map(len, _columns(header, rows, indices))) <= width

    if fits(list(range(len(header)))):
        return _columns(header, rows, list(range(len(header))))
    groups: list[list[int]] = []
    current = [0]
    for index in range(1, len(header)):
        if fits([*current, index]):
            current = [*current, index]
            continue
        if len(current) == 1 or not fits([0, index]):
            return _stacked(header, rows, width)
        groups.append(current)
        current = [0, index]
    groups.append(current)
    lines: list[str] = []
    for group in groups:
        lines += ([""] if lines else []) + _columns(header, rows, group)
    return lines


def _stacked(header: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> list[str]:
    lines: list[str] = []
    for row in rows:
        lines += ([""] if lines else []) + wrap(f"{header[0]}: {row[0]}", width, hang="  ")
        for name, value in zip(header[1:], row[1:], strict=True):
            lines += wrap(f"{name}: {value}", width, indent="  ", hang="  ")
    return lines
