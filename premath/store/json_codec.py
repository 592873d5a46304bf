"""JSON in and out with orjson's exact answers, without importing orjson for a small call.

orjson is premath's codec: fast, and what it writes is what the reference's serde_json writes.
But its import costs about as much as the rest of a hot command's start-up (it imports
dataclasses, inspect, uuid and platform to recognise their types), and agents start those
commands hundreds of times. So a process that has not loaded orjson reads and writes small
documents with the standard library's `json`, held to orjson's answers: whatever the standard
library would treat differently goes to orjson itself (NaN or Infinity, an integer outside
i64/u64, a number too big for a double, a surrogate escape, bytes that are not UTF-8, any error,
deep nesting; on the way out a float, a non-string key, a type it does not know). Values, bytes
and error messages are therefore orjson's either way. Big inputs, and every process that has
loaded orjson already (the servers), use orjson directly. tests/store/test_json_codec.py holds
the two paths to the same answers.
"""

import json
import math
import os
import re
import sys
from collections.abc import Callable
from typing import Any

JSONDecodeError = json.JSONDecodeError
"""What invalid input raises on either path (orjson's error is a subclass)."""

SMALL_INPUT_BYTES = 512 * 1024
"""Up to this size the standard library decodes sooner than orjson can be imported."""
_SMALL_OUTPUT_NODES = 10_000
_MAX_DEPTH = 250  # orjson refuses to write deeper than 254 levels
_I64_MIN, _U64_MAX = -(2**63), 2**64 - 1


class RawNumber:
    """A JSON number written exactly as `text` (serde's layout of a float)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


_MARK = f"\ue000{os.urandom(6).hex()}:"
"""Stands for a raw number's quotes where orjson's `Fragment` is not used; private-use and
random per process, so no text a user wrote can be mistaken for it."""
_MARK_BYTES = _MARK.encode()
_MARKED = re.compile(b'"' + re.escape(_MARK_BYTES) + rb'([-+.0-9eE]+)"')


class _Unsure(Exception):
    """The standard library would answer differently from orjson here."""


def _orjson() -> Any:
    import orjson

    return orjson


def _checked_int(text: str) -> int:
    value = int(text)
    if len(text) >= 19 and not _I64_MIN <= value <= _U64_MAX:
        raise _Unsure  # orjson reads it as a float
    return value


def _checked_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _Unsure  # orjson refuses it
    return value


def _refuse_constant(_name: str) -> Any:
    raise _Unsure  # NaN, Infinity: orjson refuses them


_DECODER = json.JSONDecoder(
    parse_int=_checked_int, parse_float=_checked_float, parse_constant=_refuse_constant
)
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_TEXT = re.compile(r"\\u[dD][89a-fA-F]")


def _small_loads(data: bytes | bytearray | memoryview | str) -> Any:
    """orjson.loads(data) by the standard library, or by orjson where they could differ."""
    try:
        if isinstance(data, str):
            if not data.isascii():
                data.encode("utf-8")  # a lone surrogate: orjson refuses the text
            sure = _SURROGATE_ESCAPE_TEXT.search(data) is None
            text = data
        else:
            data = bytes(data)
            sure = _SURROGATE_ESCAPE_BYTES.search(data) is None
            text = data.decode("utf-8")
        if sure:
            return _DECODER.decode(text)
    except (ValueError, RecursionError, _Unsure):  # JSON and Unicode errors are ValueErrors
        pass
    return _orjson().loads(data)


def decoder_for(size: int) -> Callable[[Any], Any]:
    """The `loads` for the documents (or lines) of a `size`-byte input."""
    if size > SMALL_INPUT_BYTES or "orjson" in sys.modules:
        return _orjson().loads  # type: ignore[no-any-return]
    return _small_loads


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """The JSON value of `data`, as orjson decodes it (JSONDecodeError when invalid)."""
    return decoder_for(len(data))(data)


_LEAF_TYPES = frozenset({str, bool, type(None), RawNumber})


def _plain(value: Any) -> bool:
    """Whether the standard library writes `value` as orjson does, and soon enough: no float
    (orjson has its own layout), no integer outside i64/u64, only string keys, no other type,
    at most `_MAX_DEPTH` levels and `_SMALL_OUTPUT_NODES` containers and items (an explicit
    stack: no recursion limit of ours decides)."""
    leaf_types, stack, left = _LEAF_TYPES, [(value, 0)], _SMALL_OUTPUT_NODES
    while stack:
        node, depth = stack.pop()
        kind = type(node)
        if kind is dict:
            items = node.values()
            if not all(type(key) is str for key in node):
                return False
        elif kind is list or kind is tuple:
            items = node
        elif kind in leaf_types:
            continue
        elif kind is int:
            if not _I64_MIN <= node <= _U64_MAX:
                return False
            continue
        else:
            return False
        left -= 1 + len(items)
        if depth >= _MAX_DEPTH or left < 0:
            return False
        for item in items:
            if type(item) not in leaf_types:
                stack.append((item, depth + 1))
    return True


def _marked(obj: Any) -> str:
    if type(obj) is RawNumber:
        return _MARK + obj.text
    raise TypeError(f"Type is not JSON serializable: {type(obj).__name__}")


_ENCODERS: dict[tuple[bool, bool], json.JSONEncoder] = {}


def _small_encoder(indent: bool, sort_keys: bool) -> json.JSONEncoder:
    encoder = _ENCODERS.get((indent, sort_keys))
    if encoder is None:
        encoder = _ENCODERS[indent, sort_keys] = json.JSONEncoder(
            ensure_ascii=False,
            check_circular=False,
            allow_nan=False,
            sort_keys=sort_keys,
            indent=2 if indent else None,
            separators=(",", ": ") if indent else (",", ":"),
            default=_marked,
        )
    return encoder


def _fragment_or_mark(obj: Any) -> Any:
    if type(obj) is RawNumber:
        fragment = getattr(_orjson(), "Fragment", None)
        return _MARK + obj.text if fragment is None else fragment(obj.text.encode())
    raise TypeError(f"Type is not JSON serializable: {type(obj).__name__}")


def compact_encoder() -> Callable[[Any], bytes]:
    """The `dumps` for many compact rows that hold no `RawNumber`: orjson's own once loaded."""
    orjson = sys.modules.get("orjson")
    return dumps if orjson is None else orjson.dumps


def _small_dumps(value: Any, indent: bool, sort_keys: bool) -> bytes | None:
    """orjson's bytes for `value` by the standard library; None where they could differ."""
    if not _plain(value):
        return None
    try:
        data = _small_encoder(indent, sort_keys).encode(value).encode("utf-8")
    except UnicodeEncodeError:
        return None  # a lone surrogate: orjson refuses it, in its own words
    return _MARKED.sub(rb"\1", data) if _MARK_BYTES in data else data


def dumps(value: Any, *, indent: bool = False, sort_keys: bool = False) -> bytes:
    """orjson's bytes for `value`: compact or 2-space indented, keys in order or sorted; a
    `RawNumber` written as its text."""
    if "orjson" not in sys.modules:
        small = _small_dumps(value, indent, sort_keys)
        if small is not None:
            return small
    orjson = _orjson()
    option = (orjson.OPT_INDENT_2 if indent else 0) | (orjson.OPT_SORT_KEYS if sort_keys else 0)
    data: bytes = orjson.dumps(value, default=_fragment_or_mark, option=option)
    if not hasattr(orjson, "Fragment") and _MARK_BYTES in data:
        return _MARKED.sub(rb"\1", data)
    return data
