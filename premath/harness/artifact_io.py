"""Loading and saving one harness artifact with the reference's error wording, as our errors."""

from __future__ import annotations

from collections.abc import Callable

from premath.errors import ArtifactInvalid, IoFailure, NotFound
from premath.models.serde import SchemaViolation
from premath.store.documents import (
    DocumentMalformed,
    DocumentUnreadable,
    os_error_text,
    read_document,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def load_artifact(
    path: str,
    parse: Callable[[Any], dict[str, Any]],
    *,
    read_prefix: str,
    parse_prefix: str,
    invalid_prefix: str = "",
) -> dict[str, Any]:
    """Read, decode and parse `path`; `parse` raises ValueError subclasses for bad contents.

    A SchemaViolation or malformed JSON is reported after `parse_prefix`; other ValueErrors
    (the artifact's own rule checks) are reported after `invalid_prefix`.
    """
    try:
        document = read_document(path)
    except DocumentUnreadable as exc:
        error = NotFound if exc.missing else IoFailure
        raise error(f"{read_prefix}{exc.detail}") from exc
    except DocumentMalformed as exc:
        raise ArtifactInvalid(f"{parse_prefix}{exc}") from exc
    try:
        return parse(document)
    except SchemaViolation as exc:
        raise ArtifactInvalid(f"{parse_prefix}{exc}") from exc
    except ValueError as exc:
        raise ArtifactInvalid(f"{invalid_prefix}{exc}") from exc


def save_artifact(path: str, document: dict[str, Any], *, write_prefix: str) -> None:
    """Write `document` atomically; an OS failure (full disk, ...) is IoFailure after the
    reference's `write_prefix` (`failed to write harness session artifact <path>: `)."""
    from premath.store.atomic import write_atomic  # writers only: readers start leaner
    from premath.store.canonical import document_bytes

    try:
        write_atomic(path, document_bytes(document))
    except OSError as exc:
        raise IoFailure(f"{write_prefix}{os_error_text(exc)}") from None
