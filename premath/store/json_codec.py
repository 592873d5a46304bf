"""JSON in and out with orjson's exact answers, without importing orjson for a small call.

orjson is premath's codec: fast, and what it writes is what the reference's serde_json writes.
But its import costs about as much as the rest of a hot command's start-up (it imports
dataclasses, inspect, uuid and platform to recognise their types), and agents start those
commands hundreds of times. So a process that has not loaded orjson reads and writes small
documents with the standard library's JSON core (`_json`, the C scanner and encoder inside
`json`, whose own import pulls in `re`), held to orjson's answers: whatever the standard
library would treat differently goes to orjson itself (NaN or Infinity, an integer outside
i64/u64, a number too big for a double, a surrogate escape, bytes that are not UTF-8, any error,
deep nesting; on the way out a float, a non-string key, a type it does not know). Values, bytes
and error messages are therefore orjson's either way. Big inputs, and every process that has
loaded orjson already (the servers), use orjson directly. `_json` is private to CPython, so it
is used only on the versions whose `_json` the tests have held to orjson (`STDLIB_CORE`);
elsewhere every call goes to orjson. tests/store/test_json_codec.py holds the two paths to the
same answers.
"""

from __future__ import annotations

import functools
import math
import os
import sys
from collections.abc import Callable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from json import JSONDecodeError as JSONDecodeError
    from typing import Any
else:

    def __getattr__(name: str) -> Any:
        """`JSONDecodeError`, what invalid input raises on either path (orjson's error is a
        subclass), loaded when an `except` clause first asks for it: `json` imports `re`,
        which a hot command does not need."""
        if name != "JSONDecodeError":
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from json import JSONDecodeError

        return JSONDecodeError


def uses_stdlib_core(implementation: str, version: tuple[int, ...]) -> bool:
    """Whether this interpreter's `_json` is one the tests hold to orjson's answers (its
    scanner and encoder take the arguments this module passes): CPython 3.11 to 3.13."""
    return implementation == "cpython" and (3, 11) <= version[:2] <= (3, 13)


STDLIB_CORE = uses_stdlib_core(sys.implementation.name, sys.version_info[:2])
"""Small documents go through the standard library's `_json`; False: all through orjson."""
if STDLIB_CORE:
    from _json import encode_basestring, make_encoder, make_scanner


SMALL_INPUT_BYTES = 512 * 1024
"""Up to this size the standard library decodes sooner than orjson can be imported."""
_SMALL_OUTPUT_NODES = 10_000
_MAX_DEPTH = 250  # orjson refuses to write deeper than 254 levels
_MAX_READ_DEPTH = 1024
"""orjson refuses to read deeper nesting; the standard library's limit is Python's (3.11: about
1,000 levels, a RecursionError that goes to orjson) or its own (3.12 on: deeper), so a scan
that may have gone past it is measured."""
_I64_MIN, _U64_MAX = -(2**63), 2**64 - 1


class RawNumber:
    """A JSON number written exactly as `text` (serde's layout of a float)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


_MARK = f"\ue000{os.urandom(6).hex()}:"
"""Stands for a raw number's quotes in the standard library's output (orjson writes a
`Fragment`); private-use and random per process, so no text a user wrote can be mistaken for
it. It pays: a join check whose payloads hold floats (their digests write serde's floats as raw
numbers) would otherwise import orjson, more than doubling that command's CPU time."""
_MARK_BYTES = _MARK.encode()


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


class _ScanRules:
    """What `_json.make_scanner` reads (json.JSONDecoder's attributes): strict strings, hooks
    for objects' pairs and for numbers and constants."""

    strict = True
    object_hook = None

    def __init__(
        self,
        object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None,
        parse_int: Callable[[str], Any],
        parse_float: Callable[[str], Any],
        parse_constant: Callable[[str], Any],
    ) -> None:
        self.object_pairs_hook = object_pairs_hook
        self.parse_int = parse_int
        self.parse_float = parse_float
        self.parse_constant = parse_constant


def _scanner(rules: _ScanRules) -> Callable[[str, int], tuple[Any, int]]:
    return make_scanner(rules)  # type: ignore[arg-type]  # any object with these names


if STDLIB_CORE:
    _scan_value = _scanner(_ScanRules(None, _checked_int, _checked_float, _refuse_constant))
    """`_Unsure` wherever orjson could read a number or constant differently."""
_JSON_WHITE_SPACE = " \t\n\r"


def _has_surrogate_escape(text: str) -> bool:
    """Whether `text` holds `\\u` followed by a surrogate's first digits (`d8`-`df`): the
    standard library pairs or keeps those, orjson refuses or replaces them."""
    if "\\u" not in text:
        return False
    lowered = text.lower()
    start = lowered.find("\\ud")
    while start >= 0:
        if lowered[start + 3 : start + 4] in ("8", "9", "a", "b", "c", "d", "e", "f"):
            return True
        start = lowered.find("\\ud", start + 1)
    return False


def _small_loads(data: bytes | bytearray | memoryview | str) -> Any:
    """orjson.loads(data) by the standard library, or by orjson where they could differ."""
    try:
        if isinstance(data, str):
            if not data.isascii():
                data.encode("utf-8")  # a lone surrogate: orjson refuses the text
            text = data
        else:
            data = bytes(data)
            text = data.decode("utf-8")
        if not _has_surrogate_escape(text):
            start = len(text) - len(text.lstrip(_JSON_WHITE_SPACE))
            value, end = _scan_value(text, start)
            if (end == len(text) or not text[end:].strip(_JSON_WHITE_SPACE)) and not (
                text.count("[") + text.count("{") > _MAX_READ_DEPTH
                and _deeper_than(value, _MAX_READ_DEPTH)
            ):
                return value
    # ValueError covers JSON and Unicode errors; SystemError is 3.11's scanner failing to word a
    # syntax error before `json.decoder` is loaded.
    except (ValueError, RecursionError, StopIteration, SystemError, _Unsure):
        pass
    return _orjson().loads(data)


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether `value` nests lists and objects more than `limit` deep (an explicit stack)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if type(node) is dict else node if type(node) is list else ()
        for child in children:
            if type(child) is dict or type(child) is list:
                if depth >= limit:
                    return True
                stack.append((child, depth + 1))
    return False


class _RepeatedKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _refuse_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    document: dict[str, Any] = {}
    for key, value in pairs:
        if key in document:
            raise _RepeatedKey(key)
        document[key] = value
    return document


def decode_with_pairs(
    data: bytes,
    object_pairs_hook: Callable[[list[tuple[str, Any]]], Any],
    parse_int: Callable[[str], Any] = int,
) -> Any:
    """`json.loads(data, object_pairs_hook=..., parse_int=...)` for `data` that `loads` already
    accepted (UTF-8, one value, no NaN): each object's key-value pairs as written, repeats
    included, go through the hook, innermost first. Deep nesting raises RecursionError."""
    if not STDLIB_CORE:
        import json  # the public scanner: `json` also imports `re`, which `_json` spares

        return json.loads(data, object_pairs_hook=object_pairs_hook, parse_int=parse_int)
    text = data.decode("utf-8")
    scan = _scanner(_ScanRules(object_pairs_hook, parse_int, float, float))
    return scan(text, len(text) - len(text.lstrip(_JSON_WHITE_SPACE)))[0]


def first_repeated_key(data: bytes) -> str | None:
    """The first key an object of `data` repeats (as `decode_with_pairs` meets objects), None
    when none does: orjson keeps the last value of a repeated key silently."""
    try:
        decode_with_pairs(data, _refuse_repeated_keys)
    except _RepeatedKey as repeated:
        return repeated.key
    return None


def decoder_for(size: int) -> Callable[[Any], Any]:
    """The `loads` for the documents (or lines) of a `size`-byte input."""
    if size > SMALL_INPUT_BYTES or "orjson" in sys.modules or not STDLIB_CORE:
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


if STDLIB_CORE:
    _compact_chunks = {
        sort_keys: make_encoder(
            None, _marked, encode_basestring, None, ":", ",", sort_keys, False, False
        )
        for sort_keys in (False, True)
    }
    """json.JSONEncoder's C encoder, compact, keys in order or sorted: `(value, 0)` gives
    chunks."""


def _indented(value: Any, sort_keys: bool) -> str:
    """`value` indented by two spaces as orjson's OPT_INDENT_2 writes it (`_plain` values only;
    the standard library's C encoder does not indent before Python 3.13)."""
    chunks: list[str] = []
    _write_indented(value, "\n", sort_keys, chunks)
    return "".join(chunks)


_LITERALS = {True: "true", False: "false", None: "null"}


def _write_indented(value: Any, newline: str, sort_keys: bool, chunks: list[str]) -> None:
    kind = type(value)
    if kind is str:
        chunks.append(encode_basestring(value))
    elif kind is dict:
        if not value:
            chunks.append("{}")
            return
        inner, opening = newline + "  ", "{"
        for key, item in sorted(value.items()) if sort_keys else value.items():
            chunks.append(f"{opening}{inner}{encode_basestring(key)}: ")
            _write_indented(item, inner, sort_keys, chunks)
            opening = ","
        chunks.append(newline + "}")
    elif kind is list or kind is tuple:
        if not value:
            chunks.append("[]")
            return
        inner, opening = newline + "  ", "["
        for item in value:
            chunks.append(opening + inner)
            _write_indented(item, inner, sort_keys, chunks)
            opening = ","
        chunks.append(newline + "]")
    elif kind is int:
        chunks.append(int.__repr__(value))
    elif kind is RawNumber:
        chunks.append(value.text)
    else:
        chunks.append(_LITERALS[value])


def _unmarked(data: bytes) -> bytes:
    """`data` with each marked raw number's quotes and mark taken out (the number's text holds
    no quote, so the first quote after a mark closes it)."""
    head, *marked = data.split(b'"' + _MARK_BYTES)
    return head + b"".join(part.replace(b'"', b"", 1) for part in marked)


def _fragment(obj: Any) -> Any:
    if type(obj) is RawNumber:
        return _orjson().Fragment(obj.text.encode())
    raise TypeError(f"Type is not JSON serializable: {type(obj).__name__}")


def dumps_plain_lines(values: list[Any]) -> bytes:
    """orjson's compact bytes of each value, each followed by `\\n`, for values the caller knows
    to be plain: strings, booleans, None, integers within i64, and lists and string-keyed
    objects of those, a few levels deep (no float, no `RawNumber`). Nothing is checked: one C
    encoder call per value, where `dumps` would first walk each value in Python."""
    if STDLIB_CORE and "orjson" not in sys.modules:
        small = _small_plain_lines(values)
        if small is not None:
            return small
    orjson = _orjson()
    dumps_line = functools.partial(orjson.dumps, option=orjson.OPT_APPEND_NEWLINE)
    return b"".join(map(dumps_line, values))


def _small_plain_lines(values: list[Any]) -> bytes | None:
    """`dumps_plain_lines` by the standard library; None for a lone surrogate (orjson refuses
    it, in its own words)."""
    encode = _compact_chunks[False]
    text = "\n".join(["".join(encode(value, 0)) for value in values])
    try:
        return (text + "\n").encode("utf-8") if values else b""
    except UnicodeEncodeError:
        return None


def _small_dumps(value: Any, indent: bool, sort_keys: bool) -> bytes | None:
    """orjson's bytes for `value` by the standard library; None where they could differ."""
    if not _plain(value):
        return None
    try:
        if indent:
            return _indented(value, sort_keys).encode("utf-8")
        data = "".join(_compact_chunks[sort_keys](value, 0)).encode("utf-8")
    except UnicodeEncodeError:
        return None  # a lone surrogate: orjson refuses it, in its own words
    return _unmarked(data) if _MARK_BYTES in data else data


def dumps(value: Any, *, indent: bool = False, sort_keys: bool = False) -> bytes:
    """orjson's bytes for `value`: compact or 2-space indented, keys in order or sorted; a
    `RawNumber` written as its text."""
    if STDLIB_CORE and "orjson" not in sys.modules:
        small = _small_dumps(value, indent, sort_keys)
        if small is not None:
            return small
    orjson = _orjson()
    option = (orjson.OPT_INDENT_2 if indent else 0) | (orjson.OPT_SORT_KEYS if sort_keys else 0)
    return orjson.dumps(value, default=_fragment, option=option)  # type: ignore[no-any-return]
