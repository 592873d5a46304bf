"""The only place objects become bytes: one named function per form the reference emits.

Each function is a wire contract (specs/cli-conventions.md "Stdout"); golden tests pin the bytes.
`store/json_codec.py` writes orjson's bytes, which match serde_json's escaping (raw non-ASCII,
lowercase `\\u001f`, `/` and DEL unescaped).
"""

from __future__ import annotations

import math

from premath.store.json_codec import RawNumber, dumps

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def raw_number(text: str) -> RawNumber:
    """A JSON number written exactly as `text` by the encoders of this module."""
    return RawNumber(text)


def stdout_bytes(document: Any) -> bytes:
    """Every `--json` document: keys sorted at every level, 2-space indent, trailing newline."""
    return dumps(document, indent=True, sort_keys=True) + b"\n"


STREAMED_ITEMS = 4096
"""A top-level list of more items than this is encoded a batch at a time (`stdout_chunks`)."""


def stdout_chunks(document: Any, batch: int = STREAMED_ITEMS) -> list[bytes]:
    """`stdout_bytes(document)` in pieces that join to it byte for byte: each top-level list of
    more than `batch` items (a 100k-issue listing) is encoded `batch` items at a time. orjson
    grows its buffer to about twice a big text before the text is whole; in pieces, no more
    than the pieces and one batch's buffer are ever in memory."""
    long_keys = sorted(
        key
        for key, value in (document.items() if type(document) is dict else ())
        if type(value) is list and len(value) > batch
    )
    if not long_keys:
        return [stdout_bytes(document)]
    rest = stdout_bytes({**document, **{key: [] for key in long_keys}})
    chunks = []
    for key in long_keys:  # sorted, as they appear in the text
        opening = b"\n  " + dumps(key) + b": ["
        before, _, rest = rest.partition(opening + b"]")
        chunks.append(before + opening)
        items = document[key]
        for start in range(0, len(items), batch):
            text = dumps(items[start : start + batch], indent=True, sort_keys=True)
            # `[\n  item,\n  item\n]` one level deeper: the items of the key's list
            chunks.append(b"," * (start > 0) + text[1:-2].replace(b"\n", b"\n  "))
        rest = b"\n  ]" + rest
    chunks.append(rest)
    return chunks


def response_bytes(document: Any) -> bytes:
    """An HTTP JSON body of the observation API: keys sorted, 2-space indent, no newline."""
    return dumps(document, indent=True, sort_keys=True)


def document_bytes(document: Any) -> bytes:
    """Session and ledger files: field (insertion) order, 2-space indent, trailing newline."""
    return dumps(document, indent=True) + b"\n"


def row_bytes(row: Any) -> bytes:
    """One JSONL row: compact, field order, trailing newline."""
    return dumps(row) + b"\n"


def sorted_row_bytes(row: Any) -> bytes:
    """One JSONL row with keys sorted at every level: compact, trailing newline."""
    return dumps(row, sort_keys=True) + b"\n"


def digest_input(payload: Any) -> bytes:
    """Input of every `sha256` ref: compact JSON with sorted keys, UTF-8."""
    return dumps(payload, sort_keys=True)


def serde_float(value: float) -> str:
    """A float as serde_json writes it (ryu): `1e16`, `1.5e-7`, `0.1`, `2.0`, `-0.0`.

    Python's repr gives the same shortest digits; only the layout differs (`1e+16`, `1.5e-07`).
    """
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    text = repr(value)
    sign = ""
    if text[0] == "-":
        sign, text = "-", text[1:]
    mantissa, _, exponent_text = text.partition("e")
    whole, _, fraction = mantissa.partition(".")
    exponent = (int(exponent_text) if exponent_text else 0) - len(fraction)
    digits = (whole + fraction).lstrip("0")
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    digits = stripped
    length = len(digits)
    point = length + exponent  # 10^(point-1) <= |value| < 10^point
    if exponent >= 0 and point <= 16:
        body = digits + "0" * exponent + ".0"
    elif 0 < point <= 16:
        body = f"{digits[:point]}.{digits[point:]}"
    elif -5 < point <= 0:
        body = "0." + "0" * -point + digits
    elif length == 1:
        body = f"{digits}e{point - 1}"
    else:
        body = f"{digits[0]}.{digits[1:]}e{point - 1}"
    return sign + body


def with_serde_floats(value: Any) -> Any:
    """`value` with every float replaced by serde's text for it."""
    if type(value) is float:
        return raw_number(serde_float(value))
    if type(value) is dict:
        return {key: with_serde_floats(item) for key, item in value.items()}
    if type(value) is list:
        return [with_serde_floats(item) for item in value]
    return value
