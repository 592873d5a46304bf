"""The join check's `sha256:` digests (specs/join-check.md "Digests"), pinned by golden tests.

`digest(value)` hashes the compact, key-sorted JSON serde_json writes for the value. orjson
writes the same bytes except for numbers serde stores as f64: their text follows serde's
(ryu) layout via `serde_float`, and integers outside i64/u64 become f64 first, as in serde.
"""

from __future__ import annotations

import hashlib
import math

from premath.models.serde import SchemaViolation
from premath.store.canonical import digest_input, raw_number

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

EMPTY_SET_DIGEST = "sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"
"""`digest([])`: what every empty row set hashes to."""

_I64_MIN = -(2**63)
_U64_LIMIT = 2**64


def _f64(value: float | int) -> Any:
    # The project's one serde float formatter; imported on first use since floats are rare in
    # digested payloads and its module costs the hot path several milliseconds.
    from premath.store.canonical import serde_float

    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        # JSON has no such number; serde_json refuses it while parsing (exit 2).
        raise SchemaViolation("number out of range")
    return raw_number(serde_float(number))


def _serde_numbers(value: Any) -> Any:
    """`value` with every number serde would hold as f64 replaced by serde's text for it."""
    kind = type(value)
    if kind is float:
        return _f64(value)
    if kind is int and not _I64_MIN <= value < _U64_LIMIT:
        return _f64(value)
    if isinstance(value, dict):
        return {key: _serde_numbers(item) for key, item in value.items()}
    if kind is list:
        return [_serde_numbers(item) for item in value]
    return value


def canonical_bytes(value: Any) -> bytes:
    """The bytes `digest` hashes: compact JSON, sorted keys, numbers as serde_json writes them."""
    return digest_input(_serde_numbers(value))


def digest(value: Any) -> str:
    """`sha256:<hex>` of the value's canonical bytes."""
    return "sha256:" + hashlib.sha256(canonical_bytes(value)).hexdigest()


def digest_string(text: str) -> str:
    """`sha256:<hex>` of the UTF-8 bytes of `text` itself, unquoted (`errorMessageDigest`)."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
