"""The observation surface as a value, and its loader (observation.md §3, §6.1).

`load_surface` reads a stored surface with the reference's typed decoding (schema.py), then
checks `schema` and `surfaceKind`. Its failures carry the reference's cause texts, which the CLI
prefixes with `failed to load observation surface at <path>: ` and the HTTP API with
`internal server error: `. A long-running reader keeps a `SurfaceCache`: the file is decoded
again only when its identity (device, inode, size, mtime) changes.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from premath.errors import ArtifactInvalid, InputInvalid
from premath.observe.schema import SURFACE, DecodeError, Document, decode
from premath.store.documents import os_error_text
from premath.store.files import read_bounded
from premath.store.issues_file import FileIdentity, file_identity

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SURFACE_SCHEMA = 1
SURFACE_KIND = "ci.observation.surface.v0"
DEFAULT_SURFACE_PATH = "artifacts/observation/latest.json"
DEFAULT_EVENTS_PATH = "artifacts/observation/events.jsonl"


@dataclass(frozen=True)
class ObservationSurface:
    """A surface: each part already in its wire form (field order, omissions)."""

    summary: Document
    latest: Document
    """`{"delta": ..., "required": ..., "decision": ...}`, each a row or None."""
    instructions: tuple[Document, ...]
    """As stored (the builder's are sorted by id); lookups sort them again, stably."""

    def document(self) -> Document:
        return {
            "schema": SURFACE_SCHEMA,
            "surfaceKind": SURFACE_KIND,
            "summary": self.summary,
            "latest": self.latest,
            "instructions": list(self.instructions),
        }


class SurfaceUnavailable(ArtifactInvalid):
    """The surface at `path` cannot be read or decoded; `cause` is the reference's text."""

    def __init__(self, path: str, cause: str) -> None:
        super().__init__(f"failed to load observation surface at {path}: {cause}")
        self.path = path
        self.cause = cause


def decode_surface(path: str, data: bytes) -> ObservationSurface:
    try:
        value: Any = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        reason = "EOF while parsing a value" if not data.strip() else str(exc)
        raise SurfaceUnavailable(
            path, f"failed to parse observation surface JSON: {reason}"
        ) from None
    try:
        document = decode(SURFACE, value)
    except DecodeError as exc:
        raise SurfaceUnavailable(path, f"failed to parse observation surface JSON: {exc}") from None
    if document["schema"] != SURFACE_SCHEMA:
        raise SurfaceUnavailable(
            path,
            "invalid observation surface: schema mismatch "
            f"(expected={SURFACE_SCHEMA}, actual={document['schema']})",
        )
    if document["surfaceKind"] != SURFACE_KIND:
        raise SurfaceUnavailable(
            path,
            "invalid observation surface: surfaceKind mismatch "
            f"(expected={SURFACE_KIND}, actual={document['surfaceKind']})",
        )
    return ObservationSurface(
        document["summary"], document["latest"], tuple(document["instructions"])
    )


def read_surface_bytes(path: str) -> bytes:
    try:
        return read_bounded(path)
    except OSError as exc:
        raise SurfaceUnavailable(
            path, f"failed to read observation surface: {os_error_text(exc)}"
        ) from None
    except InputInvalid as exc:
        raise SurfaceUnavailable(
            path, f"failed to read observation surface: {exc.message}"
        ) from None


def load_surface(path: str) -> ObservationSurface:
    """Read and decode the surface at `path` (used as given, relative to the cwd)."""
    return decode_surface(path, read_surface_bytes(path))


class SurfaceCache:
    """The last decoded surface of one path, valid while the file's identity is unchanged."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._entry: tuple[FileIdentity, ObservationSurface] | None = None

    def load(self) -> ObservationSurface:
        identity = file_identity(self.path)
        if identity is not None and self._entry is not None and self._entry[0] == identity:
            return self._entry[1]
        surface = load_surface(self.path)
        if identity is not None and identity == file_identity(self.path):
            self._entry = (identity, surface)
        return surface
