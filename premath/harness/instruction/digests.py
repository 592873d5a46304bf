"""`stable_hash`: sha256 of compact, key-sorted JSON, serde's number text (agent-surface.md §0)."""

import hashlib
from typing import Any

from premath.store.canonical import digest_input, with_serde_floats


def stable_hash(value: Any) -> str:
    return hashlib.sha256(digest_input(with_serde_floats(value))).hexdigest()
