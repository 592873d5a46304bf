"""YAML as plain data: no aliases, bounded nesting, so a small file cannot cost much to read.

A 578-byte file of nested aliases (a "billion laughs") expands into millions of nodes for any
code that walks the result; a file nested 20,000 deep overflows the parser's recursion.
Experiment files need neither, so an alias (`*name`) is refused where it appears and nesting
deeper than `MAX_DEPTH` is refused before recursion can fail: every node is composed once.
"""

from __future__ import annotations

import yaml

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_DEPTH = 64
"""Deeper than any experiment file needs; far below Python's recursion limit."""


class PlainYamlError(ValueError):
    """The document uses a feature plain data does not need; `line` is 1-based."""

    def __init__(self, problem: str, line: int, column: int) -> None:
        super().__init__(problem)
        self.problem = problem
        self.line = line
        self.column = column


class _PlainLoader(yaml.SafeLoader):
    def __init__(self, stream: bytes) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()  # type: ignore[no-untyped-call]  # untyped in types-PyYAML
        mark = event.start_mark
        if isinstance(event, yaml.AliasEvent):
            raise PlainYamlError(
                f"aliases (*{event.anchor}) are not supported; write the value out",
                mark.line + 1,
                mark.column + 1,
            )
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise PlainYamlError(
                    f"nested more than {MAX_DEPTH} levels deep", mark.line + 1, mark.column + 1
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def load_plain_yaml(data: bytes) -> Any:
    """One YAML document as plain data; yaml.YAMLError or PlainYamlError when it is not."""
    loader = _PlainLoader(data)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
