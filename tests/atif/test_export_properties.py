"""Property: whatever events a run leaves, the exported trajectory is valid ATIF."""

import math

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from premath.atif.export import ExportContext, export_trajectory
from premath.atif.validate import validate_document
from premath.models.atif import Trajectory

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
CALL_IDS = st.sampled_from(["call_1", "call_2", "x", ""])
STAMPS = st.one_of(
    st.just("2026-03-01T10:00:00.000Z"), st.just("2026-03-01"), TEXT, st.integers(0, 9), st.none()
)
TOKENS = st.one_of(st.none(), st.integers(min_value=0, max_value=10**9))
COST = st.one_of(st.none(), st.floats(min_value=0, max_value=1e6, allow_nan=False))


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)


@st.composite
def metrics(draw):
    values = {
        "prompt_tokens": draw(TOKENS),
        "completion_tokens": draw(TOKENS),
        "cached_tokens": draw(TOKENS),
        "cost_usd": draw(COST),
    }
    return {key: value for key, value in values.items() if value is not None}


@st.composite
def rows(draw):
    source = draw(st.sampled_from(["system", "user", "agent"]))
    row = {"source": source, "message": draw(TEXT)}
    if draw(st.booleans()):
        row["timestamp"] = draw(st.sampled_from(["2026-03-01T10:00:00Z", "2026-03-01"]))
    if source == "agent":
        if draw(st.booleans()):
            row["metrics"] = draw(metrics())
        if draw(st.booleans()):
            row["model_name"] = draw(TEXT)
        ids = draw(st.lists(CALL_IDS.filter(bool), max_size=3))
        if ids:
            row["tool_calls"] = [
                {"tool_call_id": i, "function_name": "f", "arguments": {"n": 1}} for i in ids
            ]
            row["results"] = [{"source_call_id": i, "content": draw(TEXT)} for i in ids]
    if draw(st.booleans()):
        row.setdefault("results", []).append({"source_call_id": None, "content": draw(TEXT)})
    if draw(st.booleans()):
        row["extra"] = draw(st.dictionaries(st.sampled_from(["tool_status", "k"]), JSON_VALUES))
    return row


def event(kind, **fields):
    return st.fixed_dictionaries({"kind": st.just(kind), "at": STAMPS, **fields})


EVENTS = st.one_of(
    event("task.instruction", text=TEXT),
    event("harness.row", row=rows()),
    event("harness.row", row=JSON_VALUES),
    event(
        "tool.call",
        call_id=CALL_IDS,
        argv=st.one_of(st.lists(TEXT, min_size=1, max_size=3), JSON_VALUES),
        message=st.one_of(st.none(), TEXT),
    ),
    event(
        "tool.result",
        call_id=CALL_IDS,
        output=st.one_of(TEXT, JSON_VALUES),
        status=st.sampled_from(["ok", "exit_nonzero"]),
        exit_code=st.integers(0, 3),
    ),
    event("tool.denied", call_id=CALL_IDS, rule=st.one_of(TEXT, st.none())),
    event("run.started"),
    event("harness.finished", status=TEXT),
    JSON_VALUES,
)


@st.composite
def turns(draw):
    """A realistic block: an agent row, then calls that join it, then their results."""
    row = draw(rows().filter(lambda r: r["source"] == "agent"))
    ids = draw(st.lists(CALL_IDS, min_size=1, max_size=3))
    block = [{"kind": "harness.row", "at": "2026-03-01T10:00:00Z", "row": row}]
    block += [{"kind": "tool.call", "call_id": i, "argv": ["ls"]} for i in ids]
    block += [
        {
            "kind": draw(st.sampled_from(["tool.result", "tool.denied"])),
            "call_id": i,
            "output": draw(TEXT),
            "rule": "deny[0]",
            "status": "ok",
            "exit_code": 0,
        }
        for i in draw(st.permutations(ids))
    ]
    return block


SEQUENCES = st.lists(st.lists(EVENTS, max_size=3) | turns(), max_size=8).map(
    lambda blocks: [event for block in blocks for event in block]
)


def export(events):
    # Through JSON bytes and back, as the events file is written and read.
    parsed = [orjson.loads(orjson.dumps(e)) for e in events]
    return export_trajectory(parsed, ExportContext("s", "premath", "0.1.0", None)).document


@settings(max_examples=200)
@given(SEQUENCES)
def test_every_export_validates(events):
    document = export(events)
    assert validate_document(document, base_dir=None) == []
    dumped = Trajectory.model_validate(document).model_dump(mode="json")
    assert dumped == document
    assert list(dumped) == list(document)
    assert [list(step) for step in dumped["steps"]] == [list(step) for step in document["steps"]]


@settings(max_examples=200)
@given(SEQUENCES)
def test_final_metrics_agree_with_the_steps(events):
    document = export(events)
    steps = document["steps"]
    assert [step["step_id"] for step in steps] == list(range(1, len(steps) + 1))
    totals = document["final_metrics"]
    assert totals["total_steps"] == len(steps)
    for field, total in (
        ("prompt_tokens", "total_prompt_tokens"),
        ("completion_tokens", "total_completion_tokens"),
        ("cached_tokens", "total_cached_tokens"),
        ("cost_usd", "total_cost_usd"),
    ):
        values = [s["metrics"][field] for s in steps if field in s.get("metrics", {})]
        if values:
            assert math.isclose(totals[total], sum(values))
        else:
            assert total not in totals


@settings(max_examples=200)
@given(SEQUENCES)
def test_results_link_within_their_step(events):
    for step in export(events)["steps"]:
        call_ids = {call["tool_call_id"] for call in step.get("tool_calls", [])}
        for result in step.get("observation", {}).get("results", []):
            assert result.get("source_call_id") in call_ids | {None}
