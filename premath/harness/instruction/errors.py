"""The instruction commands' one failure: a class and a message, exit 2 (agent-surface.md §4.1)."""

from __future__ import annotations

from premath.errors import InvalidUsage


class InstructionError(InvalidUsage):
    """`<failureClass>: <message>`; the reference exits 2 for every instruction input error."""

    def __init__(self, failure_class: str, message: str) -> None:
        super().__init__(f"{failure_class}: {message}")
        self.failure_class = failure_class
        self.detail = message


def rust_debug(value: str) -> str:
    """A string as Rust's `{:?}` prints it (quotes, backslash escapes)."""
    out = ['"']
    for ch in value:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\0":
            out.append("\\0")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{{{ord(ch):x}}}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def rust_debug_list(values: list[str]) -> str:
    return "[" + ", ".join(rust_debug(value) for value in values) + "]"
