"""Persisting the join witness so trajectory rows and session refs can point at it.

The file holds `result["witness"]` (`premath.harness.join_check.v1`) in the reference's stdout
form (sorted keys, 2-space indent, `\\n`). Its default name is content-addressed, so writing
the same witness twice gives the same bytes at the same path: an atomic replace needs no lock.
"""

from __future__ import annotations

from collections.abc import Mapping

from premath.harness.join.digests import digest
from premath.store.atomic import write_atomic
from premath.store.canonical import stdout_bytes
from premath.text import id_token

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DEFAULT_WITNESS_DIRECTORY = ".premath/join-witnesses"


def join_witness_path(result: Mapping[str, Any], directory: str = DEFAULT_WITNESS_DIRECTORY) -> str:
    """`<directory>/<call id token>.<first 16 hex of the witness digest>.json`."""
    call_id = result["normalized"]["callSpec"]["callId"]
    witness_hex = digest(result["witness"]).removeprefix("sha256:")
    return f"{directory}/{id_token(call_id, 'call')}.{witness_hex[:16]}.json"


def write_join_witness(path: str, result: Mapping[str, Any]) -> str:
    """Write the witness of a join-check result atomically; return the ref to record (the path)."""
    write_atomic(path, stdout_bytes(result["witness"]))
    return path
