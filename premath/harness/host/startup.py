"""Fatal `scheme-eval` errors before any call runs: stderr, exit 1, nothing appended (§3.3)."""

from __future__ import annotations

from premath.errors import InputInvalid
from premath.store.documents import DocumentMalformed, DocumentUnreadable, read_document

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class StartupError(InputInvalid):
    """`<message> (<class>)`; no stdout, no trajectory row."""

    def __init__(self, message: str, failure_class: str | None = None) -> None:
        super().__init__(message if failure_class is None else f"{message} ({failure_class})")
        self.failure_class = failure_class


def read_json(path: str, label: str, *, struct: bool) -> Any:
    """The document at `path`; a `struct` (the program) refuses duplicate keys as serde does."""
    try:
        return read_document(path, refuse_duplicates=struct)
    except DocumentUnreadable as exc:
        raise StartupError(f"failed to read {label} at {path}: {exc.detail}") from None
    except DocumentMalformed as exc:
        raise StartupError(f"failed to parse {label} JSON at {path}: {exc}") from None
