"""Reading JSON documents, with OS and parse failures worded as the reference words them."""

from __future__ import annotations

import os

from premath.store import json_codec
from premath.store.files import read_bounded
from premath.store.json_codec import first_repeated_key, loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class DocumentUnreadable(Exception):
    """The file could not be read; `missing` tells a user-fixable absence from other failures."""

    def __init__(self, detail: str, missing: bool) -> None:
        super().__init__(detail)
        self.detail = detail
        self.missing = missing


class DocumentMalformed(Exception):
    """The bytes are not one JSON value."""


def os_error_text(exc: OSError) -> str:
    """Rust's io::Error display, e.g. `No such file or directory (os error 2)`."""
    if exc.errno is None:
        return str(exc)
    return f"{exc.strerror or os.strerror(exc.errno)} (os error {exc.errno})"


def read_document(path: str | os.PathLike[str], *, refuse_duplicates: bool = True) -> Any:
    """Decode the JSON document at `path`, refusing duplicate keys as serde does for a struct.

    orjson validates (UTF-8, no NaN, no lone surrogates) and keeps the last of duplicate keys
    silently; a second pass with the stdlib parser, cheap on these small documents, finds them.
    `refuse_duplicates=False` reads as serde reads an untyped `Value`: the last one wins.
    """
    try:
        data = read_bounded(path)
    except OSError as exc:
        raise DocumentUnreadable(os_error_text(exc), isinstance(exc, FileNotFoundError)) from exc
    try:
        document = loads(data)
    except json_codec.JSONDecodeError as exc:
        reason = "EOF while parsing a value" if not data.strip() else str(exc)
        raise DocumentMalformed(reason) from exc
    if not refuse_duplicates:
        return document
    try:
        repeated = first_repeated_key(data)
    except RecursionError:
        raise DocumentMalformed("recursion limit exceeded") from None
    if repeated is not None:
        raise DocumentMalformed(f"duplicate field `{repeated}`")
    return document
