"""The JSON codec: the standard library's answers held to orjson's (values, refusals and their
words, bytes), serde's floats on both paths, orjson alone where `_json` is not one the tests
know, and hot commands that import orjson only for a big input."""

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from premath.harness.join.digests import canonical_bytes
from premath.store import canonical, json_codec
from tests.support.stores import write_open_store

texts = st.text(st.characters(codec="utf-8"), max_size=12)
leaves = st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | texts
floats = st.floats(allow_nan=False, allow_infinity=False)


def _nested(leaf):
    return st.recursive(
        leaf,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
        max_leaves=16,
    )


values = _nested(leaves)
values_with_floats = _nested(leaves | floats)
FORMS = [(indent, sort_keys) for indent in (False, True) for sort_keys in (False, True)]


def _option(indent: bool, sort_keys: bool) -> int:
    return (orjson.OPT_INDENT_2 if indent else 0) | (orjson.OPT_SORT_KEYS if sort_keys else 0)


@given(values)
def test_the_standard_library_writes_orjsons_bytes(value):
    for indent, sort_keys in FORMS:
        expected = orjson.dumps(value, option=_option(indent, sort_keys))
        assert json_codec._small_dumps(value, indent, sort_keys) == expected


@given(values_with_floats)
def test_serde_floats_are_written_alike_on_both_paths(value):
    value = canonical.with_serde_floats(value)
    for indent, sort_keys in FORMS:
        orjsons = json_codec.dumps(value, indent=indent, sort_keys=sort_keys)  # orjson is loaded
        assert json_codec._small_dumps(value, indent, sort_keys) == orjsons


@pytest.mark.parametrize(
    "value",
    [1.5, [float("nan")], {1: "a"}, 2**64, -(2**63) - 1, "\ud800", [[]] * 20_000],
    ids=["float", "nan", "int key", "u64+1", "i64-1", "lone surrogate", "big"],
)
def test_what_the_standard_library_would_write_differently_goes_to_orjson(value):
    assert json_codec._small_dumps(value, False, False) is None


def test_deep_nesting_goes_to_orjson_which_refuses_it():
    deep: list = []
    for _ in range(300):
        deep = [deep]
    assert json_codec._small_dumps(deep, False, False) is None
    with pytest.raises(orjson.JSONEncodeError):
        json_codec.dumps(deep)


ENCODERS = [
    canonical.stdout_bytes,
    canonical.document_bytes,
    canonical.row_bytes,
    canonical.sorted_row_bytes,
    canonical.digest_input,
]


def test_a_float_is_written_as_serde_writes_it_on_every_path():
    row = canonical.with_serde_floats({"metadata": {"ratio": 1e16, "small": 1.5e-7, "t": "1e16"}})
    expected = b'{"metadata":{"ratio":1e16,"small":1.5e-7,"t":"1e16"}}'
    assert json_codec._small_dumps(row, False, False) == expected
    assert canonical.row_bytes(row) == expected + b"\n"


def test_text_that_looks_like_a_raw_number_stays_a_string():
    """The mark is random per process: a user cannot write it into a title."""
    title = "\ue000serde-number:1"
    assert json_codec._small_dumps({"title": title}, False, False) == orjson.dumps({"title": title})


def _shape(value) -> list:
    """Every node of `value` as (type, scalar) in document order, without recursion (a
    thousand levels deep is within orjson's reach, beyond `==`'s and `repr`'s)."""
    shape, stack = [], [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            shape.append(("dict", len(node)))
            for key, item in reversed(node.items()):
                stack += [item, key]
        elif isinstance(node, list):
            shape.append(("list", len(node)))
            stack += reversed(node)
        else:
            shape.append((type(node).__name__, repr(node)))
    return shape


def _answer(loads, data):
    try:
        value = loads(data)
    except orjson.JSONDecodeError as exc:
        return ("refused", str(exc))
    return ("value", _shape(value))


@given(values_with_floats)
def test_the_standard_library_reads_what_orjson_reads(value):
    data = orjson.dumps(value)
    assert _answer(json_codec._small_loads, data) == _answer(orjson.loads, data)
    text = data.decode()
    assert _answer(json_codec._small_loads, text) == _answer(orjson.loads, text)


HOSTILE = [
    b"NaN",
    b"[Infinity]",
    b"-Infinity",
    b"1e400",
    b"[-1e400]",
    b"1e-400",
    b'"\\ud800"',
    b'"\\ud83d\\ude00"',
    b"18446744073709551615",
    b"18446744073709551616",
    b"-9223372036854775808",
    b"-9223372036854775809",
    b"\xef\xbb\xbf{}",
    b"\xff",
    b'"\xc3"',
    b'"\x01"',
    b"[1,]",
    b"",
    b" \t\r\n",
    b"\x0c{}",
    b"{}x",
    b'{"a":1,"a":2}',
    b"01",
    b"-0",
    b"-0.0",
    b"1.5e-7",
    b"[" * 1000 + b"]" * 1000,
    b"[" * 1024 + b"]" * 1024,
    b"[" * 1025 + b"]" * 1025,
    b'{"a":' * 1025 + b"1" + b"}" * 1025,
    b"[" * 1100 + b"]" * 1100,
    b"[" * 5000,
]


@pytest.mark.parametrize("data", HOSTILE)
def test_hostile_input_gets_orjsons_answer_in_its_words(data):
    assert _answer(json_codec._small_loads, data) == _answer(orjson.loads, data)
    assert _answer(json_codec._small_loads, bytearray(data)) == _answer(orjson.loads, data)


@given(st.binary(max_size=24))
def test_any_bytes_get_orjsons_answer(data):
    assert _answer(json_codec._small_loads, data) == _answer(orjson.loads, data)


@given(st.text(st.characters(codec=None, exclude_categories=()), max_size=24))
def test_any_text_gets_orjsons_answer(text):
    """Lone surrogates included: orjson refuses such text, and so does the codec."""
    assert _answer(json_codec._small_loads, text) == _answer(orjson.loads, text)


def _imports(argv: list[str], cwd: Path) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "premath", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "PREMATH_DIR": str(cwd / ".premath")},
        check=True,
    )
    return {line.split("|")[2].strip() for line in done.stderr.splitlines() if line.count("|") == 2}


def test_hot_commands_on_a_small_project_never_import_orjson(tmp_path):
    write_open_store(tmp_path, 50)
    for argv in (["issue", "ready", "--json"], ["issue", "claim-next", "--assignee", "w1"]):
        assert "orjson" not in _imports(argv, tmp_path), argv


def test_a_big_store_is_read_by_orjson(tmp_path):
    store = write_open_store(tmp_path, 2000, "Acceptance:\n- works\n" + "x" * 400)
    assert store.stat().st_size > json_codec.SMALL_INPUT_BYTES
    assert "orjson" in _imports(["issue", "ready", "--json"], tmp_path)


REFUSALS = """
import sys
for name in [name for name in sys.modules if name.split(".")[0] in ("json", "orjson")]:
    del sys.modules[name]
from premath.store import json_codec
for text in (b'{"a": "b', b'{"a": 1,}', b"[1, 2", b'"\\\\x"', b"", b"nul"):
    try:
        json_codec.loads(text)
    except json_codec.JSONDecodeError as exc:
        print(type(exc).__module__, exc)
"""


def test_a_fresh_process_refuses_invalid_json_in_orjsons_words():
    """Without `json` loaded, the standard library's scanner cannot word a syntax error
    (Python 3.11): the refusal is still orjson's, never an internal error."""
    done = subprocess.run(
        [sys.executable, "-c", REFUSALS], capture_output=True, text=True, check=True
    )
    expected = []
    for text in (b'{"a": "b', b'{"a": 1,}', b"[1, 2", b'"\\x"', b"", b"nul"):
        with pytest.raises(orjson.JSONDecodeError) as refusal:
            orjson.loads(text)
        expected.append(f"orjson {refusal.value}")
    assert done.stdout.splitlines() == expected


documents = st.dictionaries(
    texts, st.lists(values, max_size=12) | values, max_size=5
)  # top-level lists long enough to be cut into batches of 1 to 4


@given(documents, st.integers(1, 4))
def test_stdout_in_pieces_is_stdout_byte_for_byte(document, batch):
    """A long top-level list is encoded a batch at a time: the pieces join to the same bytes."""
    assert b"".join(canonical.stdout_chunks(document, batch)) == canonical.stdout_bytes(document)


def test_a_long_listing_is_written_in_pieces(tmp_path):
    """`issue list --json` on a big store: the same document, written a batch at a time."""
    store = write_open_store(tmp_path, canonical.STREAMED_ITEMS * 2 + 5)
    done = subprocess.run(
        [sys.executable, "-m", "premath", "issue", "list", "--json", "--issues", str(store)],
        cwd=tmp_path, capture_output=True, check=True,
    )  # fmt: skip
    document = orjson.loads(done.stdout)
    assert done.stdout == canonical.stdout_bytes(document)
    assert document["count"] == len(document["items"]) == canonical.STREAMED_ITEMS * 2 + 5


def test_nesting_past_orjsons_limit_is_refused_even_where_the_scanner_reads_it():
    """The standard library's scanner reads as deep as the recursion limit lets it (Python 3.12
    on: deeper than orjson's 1,024 levels); such input still gets orjson's refusal."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)
    try:
        for data in (b"[" * 1025 + b"]" * 1025, b'{"a":' * 1100 + b"1" + b"}" * 1100):
            assert _answer(json_codec._small_loads, data) == _answer(orjson.loads, data)
        deepest = b"[" * 1024 + b"]" * 1024
        assert json_codec._small_loads(deepest) == orjson.loads(deepest)
    finally:
        sys.setrecursionlimit(limit)


plain_values = _nested(leaves)


@given(st.lists(plain_values, max_size=6))
def test_plain_lines_are_orjsons_lines_on_both_paths(values):
    expected = b"".join(orjson.dumps(value) + b"\n" for value in values)
    assert json_codec._small_plain_lines(values) == expected
    assert json_codec.dumps_plain_lines(values) == expected  # orjson is loaded


def test_a_lone_surrogate_in_plain_lines_goes_to_orjson_which_refuses_it():
    assert json_codec._small_plain_lines([{"title": "\ud800"}]) is None
    with pytest.raises(orjson.JSONEncodeError):
        json_codec.dumps_plain_lines([{"title": "\ud800"}])


@pytest.mark.parametrize(
    ("implementation", "version", "used"),
    [
        ("cpython", (3, 10, 14), False),
        ("cpython", (3, 11, 0), True),
        ("cpython", (3, 12, 1), True),
        ("cpython", (3, 13, 0), True),
        ("cpython", (3, 14, 0), False),
        ("pypy", (3, 11, 0), False),
    ],
)
def test_the_private_core_is_used_only_where_tested(implementation, version, used):
    assert json_codec.uses_stdlib_core(implementation, version) is used


def _never(*_args):
    raise AssertionError("the standard library's core was used")


@pytest.fixture
def orjson_only(monkeypatch):
    """The codec as on an interpreter whose `_json` the tests do not know."""
    monkeypatch.setattr(json_codec, "STDLIB_CORE", False)
    for name in ("_small_loads", "_small_dumps", "_small_plain_lines", "_scanner"):
        monkeypatch.setattr(json_codec, name, _never)


@pytest.mark.parametrize("data", HOSTILE)
def test_without_the_private_core_orjson_answers_everything(orjson_only, data):
    assert _answer(json_codec.loads, data) == _answer(orjson.loads, data)
    assert _answer(json_codec.decoder_for(1), data) == _answer(orjson.loads, data)


@given(values_with_floats)
def test_without_the_private_core_every_encoder_writes_the_same_bytes(value):
    value = canonical.with_serde_floats(value)
    expected = [encode(value) for encode in ENCODERS]
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(json_codec, "STDLIB_CORE", False)
        patched.setattr(json_codec, "_small_dumps", _never)
        assert [encode(value) for encode in ENCODERS] == expected


@given(st.lists(plain_values, max_size=6))
def test_without_the_private_core_plain_lines_are_orjsons(values):
    expected = b"".join(orjson.dumps(value) + b"\n" for value in values)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(json_codec, "STDLIB_CORE", False)
        patched.setattr(json_codec, "_small_plain_lines", _never)
        assert json_codec.dumps_plain_lines(values) == expected


def test_without_the_private_core_repeated_keys_are_still_found(orjson_only):
    assert json_codec.first_repeated_key(b'{"a": {"b": 1, "b": 2}, "c": 3}') == "b"
    assert json_codec.first_repeated_key(b'{"a": 1, "b": [1, {"c": 2}]}') is None
    assert canonical_bytes({"n": 2.5, "m": [1e16]}) == b'{"m":[1e16],"n":2.5}'


ORJSON_ONLY = """
import sys
from premath.store import canonical, json_codec
json_codec.STDLIB_CORE = False
for call in (lambda: canonical.stdout_bytes({"b": [1, "x"], "a": None}),
             lambda: canonical.row_bytes({"n": 1}),
             lambda: json_codec.dumps_plain_lines([{"id": "bd-1"}, [True]]),
             lambda: json_codec.loads(b"[1]")):
    print(repr(call()), "orjson" in sys.modules)
    sys.modules.pop("orjson", None)
"""


def test_a_fresh_process_without_the_private_core_writes_through_orjson():
    """Before anything loaded orjson (a hot command's start): every call goes to it all the
    same, with the same bytes."""
    done = subprocess.run(
        [sys.executable, "-c", ORJSON_ONLY], capture_output=True, text=True, check=True
    )
    expected = [
        b'{\n  "a": null,\n  "b": [\n    1,\n    "x"\n  ]\n}\n',
        b'{"n":1}\n',
        b'{"id":"bd-1"}\n[true]\n',
        [1],
    ]
    assert done.stdout.splitlines() == [f"{value!r} True" for value in expected]
