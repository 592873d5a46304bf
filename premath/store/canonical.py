"""The only place objects become bytes: one named function per form the reference emits.

Each function is a wire contract (harness-cli.md §0.2-§0.3); golden tests pin the bytes.
orjson matches serde_json's escaping (raw non-ASCII, lowercase `\\u001f`, `/` and DEL unescaped).
"""

from typing import Any

import orjson


def stdout_bytes(document: Any) -> bytes:
    """Every `--json` document: keys sorted at every level, 2-space indent, trailing newline."""
    return orjson.dumps(document, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


def document_bytes(document: Any) -> bytes:
    """Session and ledger files: field (insertion) order, 2-space indent, trailing newline."""
    return orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n"


def row_bytes(row: Any) -> bytes:
    """One JSONL row: compact, field order, trailing newline."""
    return orjson.dumps(row) + b"\n"


def digest_input(payload: Any) -> bytes:
    """Input of every `sha256` ref: compact JSON with sorted keys, UTF-8."""
    return orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)
