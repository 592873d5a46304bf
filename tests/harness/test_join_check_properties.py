"""Properties of the join check: its output depends on the evidence, not on how it is listed.

Rows in any order, identical rows repeated, object keys in any order: the same document and
digests. Arbitrary values in any field: a document or InvalidUsage, never another exception.
"""

import math
import random
import re
import tempfile
from pathlib import Path
from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from premath.errors import InvalidUsage
from premath.harness.join.check import evaluate_join_check, run_join_check
from premath.harness.join.digests import canonical_bytes
from premath.store.canonical import stdout_bytes
from tests.harness.join_check_inputs import baseline, evidence

CALL_IDS = st.sets(st.sampled_from(["tc-1", "tc-2", "tc-3", "tc-4", "tc-5"]))
TEXT = st.text(alphabet="ab -\u00e9\t", max_size=4)


@st.composite
def turns(draw: st.DrawFn) -> dict[str, Any]:
    """Evidence for a random turn: any subsets of calls requested, answered, used, rendered."""
    requested, answered, used, rendered = (draw(CALL_IDS) for _ in range(4))
    document = baseline()
    surfaces = evidence(document)
    surfaces["toolRequests"] = [
        {"toolCallId": call, "toolName": f"tool.{call}", "schemaDigest": draw(TEXT)}
        for call in requested
    ]
    surfaces["toolResults"] = [
        draw(
            st.sampled_from(
                [
                    {"toolCallId": call, "status": "ok", "resultDigest": f"sha256:{call}"},
                    {"toolCallId": call, "payload": {"call": call, "n": [1.5, 2, None]}},
                    {"toolCallId": call, "errorCode": "E", "retryable": True, "errorMessage": "m"},
                    {"toolCallId": call, "status": "error", "rawError": {"detail": call}},
                ]
            )
        )
        for call in answered
    ]
    surfaces["toolUse"] = [
        {"toolCallId": call, "disposition": draw(st.sampled_from(["consumed", "observed"]))}
        for call in used
    ]
    render = surfaces["toolRender"][0]
    surfaces["toolRender"] = [{**render, "toolCallId": call} for call in rendered]
    surfaces["sessionRefs"] = draw(st.lists(TEXT, max_size=4))
    return document


SURFACES = ("toolRequests", "toolResults", "toolUse", "toolRender", "sessionRefs")


def _shuffled(document: dict[str, Any], rng: random.Random, repeat: bool) -> dict[str, Any]:
    surfaces = evidence(document)
    for name in SURFACES:
        rows = list(surfaces[name])
        if repeat and rows:
            rows.append(rng.choice(rows))
        rng.shuffle(rows)
        surfaces[name] = rows
    return document


def _keys_reordered(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict):
        items = [(key, _keys_reordered(item, rng)) for key, item in value.items()]
        rng.shuffle(items)
        return dict(items)
    if isinstance(value, list):
        return [_keys_reordered(item, rng) for item in value]
    return value


def _output(document: dict[str, Any]) -> bytes:
    try:
        return stdout_bytes(evaluate_join_check(document))
    except InvalidUsage as refusal:
        return refusal.message.encode()


@given(turns(), st.randoms(use_true_random=False), st.booleans())
def test_output_does_not_depend_on_row_order_or_repeats(document, rng, repeat):
    expected = _output(document)
    assert _output(_shuffled(document, rng, repeat)) == expected


@given(turns(), st.randoms(use_true_random=False))
def test_digests_are_stable_under_key_reordering(document, rng):
    expected = evaluate_join_check(document)
    reordered = evaluate_join_check(_keys_reordered(document, rng))
    assert stdout_bytes(reordered) == stdout_bytes(expected)
    assert reordered["witness"]["digests"] == expected["normalized"]["digests"]


@given(turns(), st.randoms(use_true_random=False))
def test_file_input_in_any_key_order_gives_identical_stdout(document, rng):
    with tempfile.TemporaryDirectory() as folder:
        first, second = Path(folder) / "a.json", Path(folder) / "b.json"
        first.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2))
        second.write_bytes(orjson.dumps(_keys_reordered(document, rng)))
        assert stdout_bytes(run_join_check(str(first))) == stdout_bytes(run_join_check(str(second)))


def _json_values() -> st.SearchStrategy[Any]:
    scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
        max_leaves=6,
    )


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index))
    return found


@given(st.data())
def test_any_value_anywhere_gives_a_document_or_invalid_usage(data):
    document = baseline()
    path = data.draw(st.sampled_from(_paths(document)))
    target: Any = document
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = data.draw(_json_values())
    try:
        output: dict[str, Any] | str = evaluate_join_check(document)
    except InvalidUsage as refusal:
        output = refusal.message
    if isinstance(output, str):
        assert output.startswith("harness_join_check_invalid: ")
    else:
        assert output["result"] in ("accepted", "rejected")
        assert output["joinClosed"] is (output["failureClasses"] == [])


@given(turns())
def test_normalising_normalised_rows_changes_nothing(document):
    """Normalised request/use/render/queue/view rows and handoff, fed back, normalise to themselves.

    Result rows are left as given: a normalised error row keeps only digests of its material.
    """
    first = evaluate_join_check(document)["normalized"]
    again = baseline()
    surfaces = evidence(again)
    surfaces["toolResults"] = evidence(document)["toolResults"]
    surfaces["callSpec"] = first["callSpec"]
    surfaces["protocolState"] = first["protocolState"]
    surfaces["handoff"] = first["handoff"]
    for name in ("toolRequests", "toolUse", "toolRender", "reminderQueue", "stateViews"):
        surfaces[name] = first.get(name, [])
    surfaces["sessionRefs"] = first.get("sessionRefs", [])
    assert evaluate_join_check(again)["normalized"] == first


SERDE_FLOAT = re.compile(r"-?(0|[1-9][0-9]*)\.[0-9]+|-?[1-9](\.[0-9]+)?e-?[1-9][0-9]*")


def _digits(text: str) -> str:
    return text.split("e")[0].lstrip("-").replace(".", "").strip("0")


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_payload_floats_are_written_in_serde_form_and_round_trip(number):
    text = canonical_bytes([number]).decode()[1:-1]
    assert SERDE_FLOAT.fullmatch(text), text
    assert float(text) == number
    assert math.copysign(1.0, float(text)) == math.copysign(1.0, number)
    assert _digits(text) == _digits(repr(number))  # shortest digits, as ryu and repr give


@given(st.integers())
def test_payload_integers_outside_64_bits_become_f64(number):
    if -(2**63) <= number < 2**64:
        assert canonical_bytes(number) == str(number).encode()
    elif abs(number) < 1.7e308:
        assert float(canonical_bytes(number)) == float(number)
