"""`stable_hash`: sha256 of compact, key-sorted JSON, serde's number text (agent-surface.md §0)."""

from __future__ import annotations

import hashlib

from premath.store.canonical import digest_input, with_serde_floats

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def stable_hash(value: Any) -> str:
    return hashlib.sha256(digest_input(with_serde_floats(value))).hexdigest()
