"""String normalisation shared by every reference artifact (specs/cli-conventions.md "Text")."""

from __future__ import annotations

from collections.abc import Iterable

# Rust's `str::trim` strips the Unicode White_Space property; Python's `str.strip()` also strips
# U+001C..U+001F, which Rust keeps, so the set is spelled out.
RUST_WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def rust_trim(value: str) -> str:
    return value.strip(RUST_WHITE_SPACE)


def clean_optional(value: str | None) -> str | None:
    """Trimmed value, or None when nothing is left."""
    if value is None:
        return None
    trimmed = rust_trim(value)
    return trimmed or None


def normalize_refs(values: Iterable[str]) -> list[str]:
    """Trimmed, non-empty, unique, sorted by code point (a Rust BTreeSet<String>)."""
    return sorted({trimmed for trimmed in map(rust_trim, values) if trimmed})


def id_token(value: str, empty: str) -> str:
    """The reference's id token: ASCII alphanumerics lowercased, `-`/`_` kept, others `_`."""
    chars = (
        ch.lower() if ch.isascii() and ch.isalnum() else ch if ch in "-_" else "_" for ch in value
    )
    return "".join(chars).strip("_") or empty


def rust_trim_line(line: bytes) -> bytes:
    """A UTF-8 line trimmed as Rust's `str::trim` (ASCII fast path; non-ASCII white space too)."""
    line = line.strip()
    if line and (line[0] >= 0x80 or line[-1] >= 0x80):
        line = rust_trim(line.decode("utf-8")).encode("utf-8")
    return line


def is_utf8(data: bytes) -> bool:
    """Whether `data` is valid UTF-8 (ASCII, the common case, without decoding)."""
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
