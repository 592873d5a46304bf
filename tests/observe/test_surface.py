"""The observation library: rounding, decoding, the build-load round trip, the read cache."""

import contextlib
import math
import os
import tempfile
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import orjson
from hypothesis import given
from hypothesis import strategies as st

from premath.observe.builder import BuildPaths, build_surface
from premath.observe.coherence import round_half_away
from premath.observe.inputs import InputReader
from premath.observe.surface import SurfaceUnavailable, decode_surface, load_surface
from premath.store.canonical import document_bytes
from tests.support.observation import (
    instruction_witness,
    issue,
    lease,
    seed_project,
    write_issues,
)


@given(st.floats(min_value=0, max_value=100, allow_nan=False), st.sampled_from([2, 6]))
def test_rounding_is_half_away_from_zero_on_the_binary_value(value, places):
    scaled = value * 10.0**places
    exact = Decimal(scaled).to_integral_value(rounding=ROUND_HALF_UP)
    assert round_half_away(value, places) == float(exact) / 10.0**places


def test_rounding_differs_from_python_round_at_exact_halves():
    assert (round_half_away(3.125, 2), round(3.125, 2)) == (3.13, 3.12)
    assert round_half_away(1 / 128, 6) == 0.007813
    assert math.copysign(1, round_half_away(-0.0, 2)) == -1


@given(st.binary(max_size=200))
def test_the_loader_refuses_any_bytes_with_a_surface_error_only(data):
    with contextlib.suppress(SurfaceUnavailable):
        decode_surface("s.json", data)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(st.dictionaries(st.sampled_from(["schema", "surfaceKind", "summary", "latest"]), JSON))
def test_the_loader_refuses_any_shape_with_a_surface_error_only(document):
    with contextlib.suppress(SurfaceUnavailable):
        decode_surface("s.json", orjson.dumps(document))


STATUSES = st.sampled_from(["open", "in_progress", "closed", "OPEN", " open ", "blocked"])


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["bd-1", "bd-2", "bd-3", "bd-4"]),
            STATUSES,
            st.lists(st.sampled_from(["bd-1", "bd-2", "bd-3", "bd-9"]), max_size=2),
            st.sampled_from([None, "2026-02-22T01:00:00Z", "2099-01-01T00:00:00Z", "bad"]),
        ),
        max_size=6,
    ),
    st.lists(
        st.tuples(
            st.sampled_from(["i-a", "i-b", "i-c"]),
            st.sampled_from(["accepted", "rejected", None]),
            st.sampled_from(["typed", "unknown", None]),
        ),
        max_size=4,
    ),
)
def test_a_built_surface_loads_back_to_the_same_bytes(issue_specs, instruction_specs):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        rows = []
        for issue_id, status, targets, expiry in issue_specs:
            extra = {"dependencies": [{"depends_on_id": t, "type": "blocks"} for t in targets]}
            if expiry is not None:
                extra["lease"] = lease(issue_id, "w", expiry)
                extra["assignee"] = "w"
            rows.append(issue(issue_id, "t", status, **extra))
        write_issues(root, rows)
        witnesses = root / "artifacts" / "ciwitness"
        witnesses.mkdir(parents=True)
        for index, (instruction_id, verdict, state) in enumerate(instruction_specs):
            fields = {"verdictClass": verdict, "instructionClassification": {"state": state}}
            document = instruction_witness(instruction_id, **fields)
            (witnesses / f"{index}.json").write_bytes(orjson.dumps(document))
        paths = BuildPaths.resolve(os.fspath(root))
        surface = build_surface(paths)
        data = document_bytes(surface.document())
        (root / "latest.json").write_bytes(data)
        loaded = load_surface(os.fspath(root / "latest.json"))
        assert document_bytes(loaded.document()) == data
        summary = surface.summary
        assert summary["needsAttention"] == (
            summary["state"] in ("rejected", "error") or summary["coherence"]["needsAttention"]
        )


def test_the_caching_reader_reads_only_files_that_changed(tmp_path):
    seed_project(tmp_path)
    paths = BuildPaths.resolve(os.fspath(tmp_path))
    reader = InputReader(cache=True)
    first = build_surface(paths, reader)
    files = reader.reads
    assert files == 3 + 2 + 1  # three latest witnesses, two instructions, the issues
    assert build_surface(paths, reader) == first
    assert reader.reads == files
    write_issues(tmp_path, [issue("bd-9", "new")])
    assert build_surface(paths, reader).summary["coherence"]["issuePartition"]["readyIssueIds"] == [
        "bd-9"
    ]
    assert reader.reads == files + 1
