"""serde_json's error positions for documents the reference reports with ` at line L column C`.

Only called on the error path (orjson decodes; this scanner explains): it walks the text the way
serde_json's parser does and names the first syntax error in serde's words and at serde's
position, and it finds where each top-level value of an object ends, for field errors.
Positions: line from 1; column = bytes consumed on that line (the offending byte included).
"""

from __future__ import annotations

from typing import NamedTuple


class SyntaxFault(ValueError):
    """A syntax error, its text ending in serde's ` at line L column C`."""


def position(text: bytes, index: int) -> str:
    """` at line L column C` for the byte at `index` (-1: nothing consumed yet)."""
    line = text.count(b"\n", 0, max(index, 0)) + 1
    start = text.rfind(b"\n", 0, max(index, 0))
    return f" at line {line} column {index - start}"


class _Scanner:
    def __init__(self, text: bytes) -> None:
        self.text = text
        self.index = 0

    def fail(self, message: str, at: int) -> SyntaxFault:
        return SyntaxFault(message + position(self.text, at))

    def skip_space(self) -> None:
        while self.index < len(self.text) and self.text[self.index] in b" \t\n\r":
            self.index += 1

    def peek(self) -> int | None:
        self.skip_space()
        return self.text[self.index] if self.index < len(self.text) else None

    def eof(self) -> SyntaxFault:
        return self.fail("EOF while parsing a value", len(self.text) - 1)

    def value(self) -> None:
        char = self.peek()
        if char is None:
            raise self.eof()
        if char == 0x7B:  # {
            self.container(0x7D, "`,` or `}`", keyed=True)
        elif char == 0x5B:  # [
            self.container(0x5D, "`,` or `]`", keyed=False)
        elif char == 0x22:
            self.string()
        elif char in b"-0123456789":
            self.number()
        elif char in b"tfn":
            word = {0x74: b"true", 0x66: b"false", 0x6E: b"null"}[char]
            for offset, expected in enumerate(word):
                at = self.index + offset
                if at >= len(self.text):
                    raise self.eof()
                if self.text[at] != expected:
                    raise self.fail("expected ident", at)
            self.index += len(word)
        else:
            raise self.fail("expected value", self.index)

    def container(self, close: int, separator: str, *, keyed: bool) -> None:
        self.index += 1
        if self.peek() == close:
            self.index += 1
            return
        while True:
            if keyed:
                char = self.peek()
                if char is None:
                    raise self.eof()
                if char != 0x22:
                    raise self.fail("key must be a string", self.index)
                self.string()
                char = self.peek()
                if char is None:
                    raise self.eof()
                if char != 0x3A:
                    raise self.fail("expected `:`", self.index)
                self.index += 1
            self.value()
            char = self.peek()
            if char is None:
                raise self.eof()
            self.index += 1
            if char == close:
                return
            if char != 0x2C:
                raise self.fail(f"expected {separator}", self.index - 1)

    def string(self) -> None:
        self.index += 1
        text = self.text
        while True:
            if self.index >= len(text):
                raise self.fail("EOF while parsing a string", len(text) - 1)
            char = text[self.index]
            self.index += 1
            if char == 0x22:
                return
            if char == 0x5C:
                if self.index >= len(text):
                    raise self.fail("EOF while parsing a string", len(text) - 1)
                escape = text[self.index]
                self.index += 1
                if escape == 0x75:
                    digits = text[self.index : self.index + 4]
                    if len(digits) < 4 or not all(d in b"0123456789abcdefABCDEF" for d in digits):
                        raise self.fail("invalid escape", self.index - 1)
                    self.index += 4
                elif escape not in b'"\\/bfnrt':
                    raise self.fail("invalid escape", self.index - 1)
            elif char < 0x20:
                raise self.fail(
                    "control character (\\u0000-\\u001F) found while parsing a string",
                    self.index - 1,
                )

    def number(self) -> None:
        start = self.index
        if self.text[self.index] == 0x2D:
            self.index += 1
        digits = 0
        while self.index < len(self.text) and self.text[self.index] in b"0123456789.eE+-":
            self.index += 1
            digits += 1
        if digits == 0:
            raise self.fail("invalid number", self.index if self.index < len(self.text) else start)


def syntax_fault(text: bytes) -> SyntaxFault | None:
    """serde_json's first syntax error in `text`, or None when serde would parse it."""
    scanner = _Scanner(text)
    try:
        scanner.value()
        if scanner.peek() is not None:
            raise scanner.fail("trailing characters", scanner.index)
    except SyntaxFault as fault:
        return fault
    return None


class ObjectEnds(NamedTuple):
    """Where a top-level object's values end, and its closing brace (for `missing field`)."""

    values: dict[str, int]
    close: int


def object_ends(text: bytes) -> ObjectEnds | None:
    """For a syntactically valid top-level object: the index of the last byte of each key's
    value (the last of a repeated key), and of the closing brace; None for anything else."""
    scanner = _Scanner(text)
    if scanner.peek() != 0x7B:
        return None
    scanner.index += 1
    ends: dict[str, int] = {}
    if scanner.peek() == 0x7D:
        return ObjectEnds(ends, scanner.index)
    while True:
        scanner.peek()
        key_start = scanner.index
        scanner.string()
        key = text[key_start + 1 : scanner.index - 1].decode("utf-8", "replace")
        scanner.peek()
        scanner.index += 1
        scanner.value()
        ends[key] = scanner.index - 1
        char = scanner.peek()
        scanner.index += 1
        if char == 0x7D:
            return ObjectEnds(ends, scanner.index - 1)
