"""Properties of trajectory rows: byte-stable round trips, normalisation, readers, validators."""

import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from premath.errors import PremathError
from premath.models.serde import SchemaViolation
from premath.models.trajectory import (
    FIELD_ORDER,
    StepInvalid,
    instant_key,
    is_failed,
    is_retry_needed,
    parse_step,
    step_order_fields,
)
from premath.record.trajectory import append_step, query_trajectory
from premath.store.canonical import row_bytes
from premath.text import RUST_WHITE_SPACE, normalize_refs, rust_trim
from premath.timefmt import parse_strict_rfc3339

NOW = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
SPACE = st.sampled_from(["", " ", "\t", "\u3000", "\xa0", "\n"])
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
NON_BLANK = st.builds(
    lambda pad_left, core, pad_right: pad_left + core + pad_right,
    SPACE,
    TEXT.filter(lambda text: rust_trim(text) != ""),
    SPACE,
)
TIMES = st.builds(
    lambda moment, fraction, zone, pad: (
        pad + f"{moment.year:04d}" + moment.strftime("-%m-%dT%H:%M:%S") + fraction + zone + pad
    ),
    st.datetimes(),
    st.sampled_from(["", ".5", ".123456789", ".1234567891"]),
    st.sampled_from(["Z", "z", "+01:00", "-23:59", "+00:00"]),
    SPACE,
)
REFS = st.lists(st.one_of(TEXT, SPACE), max_size=4)


@st.composite
def step_fields(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "step_id": draw(NON_BLANK),
        "action": draw(NON_BLANK),
        "result_class": draw(NON_BLANK),
        "issue_id": draw(st.none() | TEXT | SPACE),
        "instruction_refs": draw(REFS),
        "witness_refs": draw(REFS),
        "lineage_refs": draw(REFS),
        "started_at": draw(st.none() | TIMES | SPACE),
        "finished_at": draw(st.none() | TIMES),
    }


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step_fields(), min_size=1, max_size=5))
def test_rows_round_trip_through_append_and_read_byte_stably(batch):
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "t.jsonl")
        written = [append_step(path, now=NOW, lock_timeout=5, **fields) for fields in batch]
        data = Path(path).read_bytes()
        assert data == b"".join(row_bytes(row) for row in written)
        for line in data.splitlines(keepends=True):
            assert row_bytes(parse_step(orjson.loads(line))) == line  # normalising is idempotent
        for row in written:
            assert list(row) == [name for name in FIELD_ORDER if name in row]
        items = query_trajectory(path, "latest", len(batch))["items"]
        assert sorted(map(row_bytes, items)) == sorted(map(row_bytes, written))
        assert sorted(p.name for p in Path(folder).iterdir()) == ["t.jsonl"]


@given(st.lists(st.one_of(TEXT, SPACE, NON_BLANK), max_size=8), st.randoms())
def test_ref_normalisation_is_idempotent_and_order_insensitive(refs, random):
    once = normalize_refs(refs)
    shuffled = list(refs)
    random.shuffle(shuffled)
    assert normalize_refs(once) == once
    assert normalize_refs(shuffled) == once
    assert once == sorted(set(once))
    assert all(ref == ref.strip(RUST_WHITE_SPACE) and ref for ref in once)


GOOD_LINE = (
    b'{"schema":1,"stepKind":"premath.harness.step.v1","stepId":"s","action":"a",'
    b'"resultClass":"ok","finishedAt":"2026-02-22T00:00:00Z"}'
)
LINES = st.one_of(
    st.just(GOOD_LINE),
    st.binary(max_size=40),
    st.sampled_from([b"", b" ", b"{", b"[]", b"null", b'{"schema":1}', b"\x00", b"\xff", b"#"]),
    st.builds(
        lambda cut, junk: GOOD_LINE[:cut] + junk + GOOD_LINE[cut:],
        st.integers(0, len(GOOD_LINE)),
        st.binary(max_size=4),
    ),
)


def query_or_error(path: str, mode: Any, limit: int) -> dict[str, Any] | PremathError:
    """The projection, or our error; any other exception fails the test."""
    try:
        return query_trajectory(path, mode, limit)
    except PremathError as exc:
        return exc


@settings(max_examples=300)
@given(
    st.lists(LINES, max_size=6),
    st.sampled_from([b"\n", b"\r\n"]),
    st.booleans(),
    st.sampled_from(["latest", "failed", "retry-needed"]),
    st.integers(0, 3),
)
@example([GOOD_LINE, b'{"schema":1,"stepKind'], b"\n", False, "latest", 2)
def test_the_reader_raises_only_our_errors_on_arbitrary_bytes(
    lines, newline, terminated, mode, limit
):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.jsonl"
        data = newline.join(lines) + (newline if terminated and lines else b"")
        path.write_bytes(data)
        document = query_or_error(str(path), mode, limit)
        if isinstance(document, PremathError):
            assert document.message.startswith(
                f"failed to read harness trajectory rows from {path}: "
            )
            assert f"(path={path}, line=" in document.message
        else:
            assert document["count"] == len(document["items"]) <= limit
            assert document["totalCount"] <= len(lines)
        assert path.read_bytes() == data


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2**65) | st.floats(allow_nan=False) | TEXT,
    lambda children: st.lists(children, max_size=3),
    max_leaves=4,
)
FIELD_VALUES = {
    "schema": st.sampled_from([1, 1, 1, 2, 0, True, 1.0, -1, 2**64, "1", None]),
    "stepKind": st.sampled_from(
        ["premath.harness.step.v1", " premath.harness.step.v1\t", "v2", "", None, 1]
    ),
    "stepId": st.one_of(NON_BLANK, SPACE, st.none(), st.integers()),
    "issueId": st.one_of(TEXT, SPACE, st.none(), st.integers()),
    "action": st.one_of(NON_BLANK, SPACE, st.none()),
    "resultClass": st.one_of(NON_BLANK, SPACE, st.just([])),
    "instructionRefs": st.one_of(REFS, st.none(), st.just([1]), st.just("a")),
    "witnessRefs": st.one_of(REFS, st.none(), st.just([None])),
    "lineageRefs": st.one_of(REFS, st.just({})),
    "startedAt": st.one_of(TIMES, SPACE, st.none(), st.just("bad"), st.just(5)),
    "finishedAt": st.one_of(TIMES, TIMES, SPACE, st.just("2026-02-22"), st.none()),
    "extra": JSON_VALUES,
}


@st.composite
def nearly_valid_rows(draw: st.DrawFn) -> dict[str, Any]:
    """A valid row with optional fields, then up to two fields removed or set to odd values."""
    row: dict[str, Any] = {
        "schema": 1,
        "stepKind": "premath.harness.step.v1",
        "stepId": draw(NON_BLANK),
        "action": draw(NON_BLANK),
        "resultClass": draw(NON_BLANK),
        "finishedAt": draw(TIMES),
    }
    optional = {
        "issueId": st.none() | TEXT,
        "instructionRefs": REFS,
        "witnessRefs": REFS,
        "lineageRefs": REFS,
        "startedAt": st.none() | TIMES | SPACE,
    }
    for name in draw(st.lists(st.sampled_from(sorted(optional)), unique=True)):
        row[name] = draw(optional[name])
    for name in draw(st.lists(st.sampled_from(sorted(FIELD_VALUES)), max_size=2)):
        if name in row and draw(st.booleans()):
            del row[name]
        else:
            row[name] = draw(FIELD_VALUES[name])
    return row


ROWS = st.one_of(nearly_valid_rows(), JSON_VALUES)


def outcome(validate, value):
    try:
        return validate(value)
    except (SchemaViolation, StepInvalid) as exc:
        return type(exc), str(exc)


@settings(max_examples=600)
@given(ROWS)
def test_the_hot_validator_agrees_with_the_full_one(value):
    """step_order_fields (every row of a query) accepts and rejects exactly as parse_step."""
    fast = outcome(step_order_fields, value)
    full = outcome(parse_step, value)
    if isinstance(full, dict):
        assert fast == (
            instant_key(full["finishedAt"]),
            full["stepId"],
            full["action"],
            full["resultClass"],
        )
    else:
        assert fast == full


@pytest.mark.parametrize(
    ("result_class", "failed", "retry"),
    [
        ("completed", False, False),
        (" OK ", False, False),
        ("Verified-Accept", False, False),
        ("failed_issue_closed", True, False),
        ("retry_needed_lease_active", True, True),
        ("Rate-Limit", True, True),
        ("RateLimitExceeded", True, False),
        ("transient_failure", True, True),
        ("gateway TIMEOUT", True, True),
        ("network_down", True, True),
        ("unknown", True, False),
    ],
)
def test_result_classes(result_class, failed, retry):
    assert (is_failed(result_class), is_retry_needed(result_class)) == (failed, retry)


ORDER_TIMES = st.sampled_from(
    [
        "2026-02-22T00:00:00Z",
        "2026-02-22T01:00:00+01:00",  # the same instant as the one above
        "2026-02-21T23:59:59.999999999Z",
        "2026-02-21T23:59:60.5Z",  # a leap second: after :59.999999999, before the next minute
        "2026-02-22t00:00:00.000000001z",
        "2026-02-21T23:30:00-00:30",
        "0000-01-01T00:00:00Z",
    ]
)
ORDER_ROWS = st.lists(
    st.fixed_dictionaries(
        {
            "schema": st.just(1),
            "stepKind": st.just("premath.harness.step.v1"),
            "stepId": st.sampled_from(["a", "b", "B", "é", " a"]),
            "action": st.sampled_from(["x", "y"]),
            "resultClass": st.sampled_from(["ok", "Timeout", "boom", "rate-limit"]),
            "finishedAt": ORDER_TIMES,
        }
    ),
    max_size=12,
)


@given(ORDER_ROWS, st.sampled_from(["latest", "failed", "retry-needed"]), st.integers(0, 13))
def test_the_projection_is_the_reference_algorithm(rows, mode, limit):
    """Sort all rows (instant descending, stepId, action; stable), filter, cut (§3.2)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.jsonl"
        path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
        document = query_trajectory(str(path), mode, limit)
    normalised = [parse_step(row) for row in rows]

    def instant(row: dict[str, Any]) -> tuple[int, int]:
        parsed = parse_strict_rfc3339(row["finishedAt"])
        assert parsed is not None
        return parsed

    ordered = sorted(normalised, key=lambda row: (row["stepId"], row["action"]))
    ordered.sort(key=instant, reverse=True)  # stable: ties keep (stepId, action, file) order
    keep = {
        "latest": lambda row: True,
        "failed": lambda row: is_failed(row["resultClass"]),
        "retry-needed": lambda row: is_retry_needed(row["resultClass"]),
    }[mode]
    expected = [row for row in ordered if keep(row)][:limit]
    assert document["items"] == expected
    assert document["count"] == len(expected)
    assert document["totalCount"] == len(rows)
    assert document["failedCount"] == sum(is_failed(row["resultClass"]) for row in normalised)
    assert document["retryNeededCount"] == sum(
        is_retry_needed(row["resultClass"]) for row in normalised
    )
