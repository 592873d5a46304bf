"""Loading one harness artifact with the reference's error wording, as our error classes."""

from collections.abc import Callable
from typing import Any

from premath.errors import ArtifactInvalid, IoFailure, NotFound
from premath.models.serde import SchemaViolation
from premath.store.documents import DocumentMalformed, DocumentUnreadable, read_document


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
