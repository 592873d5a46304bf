"""Issue rows: the plain checker, its fast path and the pydantic model agree; bytes round-trip."""

import contextlib
import hashlib
import re
import string
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from premath.errors import PremathError
from premath.models.issue import IssueModel
from premath.models.issue_row import (
    RowInvalid,
    check_row,
    stored_row_or_none,
    text_is_stored,
)
from premath.store import issues_file
from premath.store.canonical import serde_float
from premath.store.issues_file import encode_store, load_issues, parse_issues
from premath.timefmt import stamps_are_stored

NOW_TEXT = "2026-03-01T10:00:00.123456Z"
NOW = datetime(2026, 3, 1, 10, 0, 0, 123456, tzinfo=UTC)
SPLICED_STORE_DIGEST = "da786b8f1eefb1b2eb37aca3d9551ad949f146d8e5369447f3fef940498fff89"
"""What the issue-memory writers of commit 2a869f2 wrote for `_written_store(30)` and its edits."""
STAMPS = [
    "2026-02-22T00:00:00Z",
    "2026-02-22T00:00:00.500Z",
    "2026-02-22T00:00:00.500000Z",
    "2026-02-22T00:00:00.123456789Z",
    "2026-02-22T00:00:00.5Z",
    "2026-02-22T00:00:00.12340Z",
    "2026-02-22T00:00:00.1234567891Z",
    "2024-02-29T23:59:60Z",
    "2026-02-22T00:00:00.500+01:00",
    "2026-02-22 00:00:00z",
    "2026-02-29T00:00:00Z",
    "2026-02-22T24:00:00Z",
    "2026-02-22T00:00:00",
    "yesterday",
]
TEXT = st.text(alphabet=string.ascii_letters + " \n\u00e9", max_size=4)
JSON_LEAF = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT
)
JSON = st.recursive(
    JSON_LEAF,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
STAMP = st.sampled_from(STAMPS) | st.none() | st.integers(0, 5)
DEPENDENCY = st.fixed_dictionaries(
    {},
    optional={
        "issue_id": TEXT | st.integers(0, 3),
        "depends_on_id": TEXT,
        "type": st.sampled_from(["blocks", "related", "waits-for", "nope"]) | st.none(),
        "dep_type": st.sampled_from(["parent-child", "replies-to"]),
        "created_by": TEXT | st.none(),
        "extra": JSON,
    },
)
LEASE = st.fixed_dictionaries(
    {},
    optional={
        "lease_id": TEXT,
        "owner": TEXT | st.integers(0, 2),
        "acquired_at": STAMP,
        "expires_at": STAMP,
        "renewed_at": STAMP,
    },
)
FIELDS = {
    "id": TEXT | st.integers(0, 3),
    "title": TEXT,
    "description": TEXT | st.none(),
    "notes": TEXT,
    "status": st.sampled_from(["open", "closed", "in_progress", " Open "]) | st.none(),
    "priority": st.integers(-(2**32), 2**32) | st.booleans() | st.floats(0, 4, allow_nan=False),
    "issue_type": st.sampled_from(["task", "epic", " EPIC ", "bug"]) | st.integers(0, 2),
    "assignee": TEXT | st.none(),
    "lease": st.none() | LEASE | st.integers(0, 1),
    "created_at": STAMP,
    "updated_at": STAMP,
    "closed_at": STAMP,
    "ephemeral": st.booleans() | st.integers(0, 1) | st.none(),
    "mol_type": TEXT,
    "labels": st.lists(TEXT, max_size=2) | st.lists(st.integers(0, 9), max_size=1) | st.none(),
    "dependencies": st.lists(DEPENDENCY, max_size=2) | st.none(),
    "metadata": JSON,
    "unknown": JSON,
}


@st.composite
def row_like(draw):
    """Rows of every kind: valid, malformed, out of order, with unknown keys."""
    chosen = draw(st.fixed_dictionaries({"id": FIELDS["id"], "title": FIELDS["title"]}))
    optional = draw(st.fixed_dictionaries({}, optional=dict(FIELDS)))
    fields = {**chosen, **optional}
    if draw(st.booleans()):
        fields.pop(draw(st.sampled_from(sorted(fields))))
    order = draw(st.permutations(sorted(fields)))
    return {key: fields[key] for key in order}


def plain(value):
    try:
        return orjson.dumps(check_row(value, NOW_TEXT))
    except RowInvalid:
        return None


def modelled(value):
    from pydantic import ValidationError

    try:
        model = IssueModel.model_validate_json(orjson.dumps(value), context={"now_text": NOW_TEXT})
    except ValidationError:
        return None
    return orjson.dumps(model.model_dump(mode="json"))


@given(row_like())
def test_plain_checker_and_pydantic_model_agree(value):
    assert plain(value) == modelled(value)


@st.composite
def near_stored(draw):
    """A row in stored form, sometimes with one value replaced or two keys swapped."""
    value = draw(row_like())
    try:
        row = dict(check_row(value, NOW_TEXT))
    except RowInvalid:
        row = {"id": "a", "title": "t", "status": "open", "priority": 2, "issue_type": "task",
               "created_at": NOW_TEXT, "updated_at": NOW_TEXT, "ephemeral": False}  # fmt: skip
    change = draw(st.sampled_from(["none", "value", "swap"]))
    keys = list(row)
    if change == "value":
        key = draw(st.sampled_from(keys))
        row[key] = draw(FIELDS.get(key, JSON) | JSON)
    elif change == "swap":
        index = draw(st.integers(0, len(keys) - 2))
        keys[index], keys[index + 1] = keys[index + 1], keys[index]
        row = {key: row[key] for key in keys}
    return row


@given(near_stored())
def test_fast_path_accepts_only_rows_the_checker_leaves_unchanged(value):
    stamps: list[str] = []
    fast = stored_row_or_none(value, stamps)
    if fast is None or not stamps_are_stored(stamps):
        return
    assert fast is value
    assert orjson.dumps(check_row(value, NOW_TEXT)) == orjson.dumps(value)


@given(st.lists(row_like(), max_size=4))
def test_rewrite_is_a_fixed_point_byte_for_byte(values):
    data = b"".join(orjson.dumps(v) + b"\n" for v in values)
    try:
        first = parse_issues(data, "t.jsonl", NOW_TEXT, tolerate_torn_tail=False)
    except PremathError:
        return
    written = encode_store(first)
    again = parse_issues(written, "t.jsonl", NOW_TEXT, tolerate_torn_tail=False)
    assert encode_store(again) == written
    assert list(again) == sorted(again)
    assert [orjson.loads(line)["id"] for line in written.splitlines()] == sorted(first)


@given(st.binary(max_size=300))
def test_readers_raise_only_premath_errors_on_arbitrary_bytes(data):
    with contextlib.suppress(PremathError):
        parse_issues(data, "t.jsonl", NOW_TEXT, tolerate_torn_tail=True)


def test_a_store_we_write_reads_back_identically(tmp_path):
    from datetime import UTC, datetime

    from premath.issues import memory

    path = str(tmp_path / "issues.jsonl")
    now = datetime(2026, 3, 1, 10, 0, 0, 123456, tzinfo=UTC)
    memory.add_issue(path, "One é", now=now, timeout_s=1, description="Acceptance:\n- x")
    memory.add_issue(path, "Two", now=now, timeout_s=1, priority=0, issue_type="EPIC")
    memory.dep_add(path, "bd-2", "bd-1", kind="blocks", created_by="me", now=now, timeout_s=1)
    memory.claim(path, "bd-1", "w", now=now, timeout_s=1)
    data = Path(path).read_bytes()
    assert encode_store(parse_issues(data, path, NOW_TEXT, tolerate_torn_tail=False)) == data
    assert (
        data.splitlines()[0]
        == (
            '{"id":"bd-1","title":"One é","description":"Acceptance:\\n- x","status":"in_progress",'
            '"priority":2,"issue_type":"task","assignee":"w","lease":{"lease_id":"lease1_bd-1_w",'
            '"owner":"w","acquired_at":"2026-03-01T10:00:00.123456Z",'
            '"expires_at":"2026-03-01T11:00:00.123456Z"},"created_at":"2026-03-01T10:00:00.123456Z",'
            '"updated_at":"2026-03-01T10:00:00.123456Z","ephemeral":false}'
        ).encode()
    )


def test_reference_rows_are_normalised_on_rewrite():
    line = (
        b'{"title":"T","id":"a","issue_type":" EPIC ","created_at":"2026-02-22 01:00:00+01:00",'
        b'"updated_at":"2026-02-22T00:00:00.500000Z","description":"","zzz":1,'
        b'"metadata":{"b":1e16,"a":{"d":2.0,"c":-0.0}},'
        b'"dependencies":[{"dep_type":"blocks","depends_on_id":"b","issue_id":"a","created_by":""}]}\n'
    )
    issues = parse_issues(line, "t.jsonl", NOW_TEXT, tolerate_torn_tail=False)
    assert encode_store(issues) == (
        b'{"id":"a","title":"T","status":"open","priority":2,"issue_type":"epic",'
        b'"created_at":"2026-02-22T00:00:00Z","updated_at":"2026-02-22T00:00:00.500Z",'
        b'"ephemeral":false,"dependencies":[{"issue_id":"a","depends_on_id":"b","type":"blocks"}],'
        b'"metadata":{"a":{"c":-0.0,"d":2.0},"b":1e16}}\n'
    )


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1e16, "1e16"),
        (1.5e-7, "1.5e-7"),
        (0.1, "0.1"),
        (2.0, "2.0"),
        (-0.0, "-0.0"),
        (0.0, "0.0"),
        (1e15, "1000000000000000.0"),
        (123.456, "123.456"),
        (1e-5, "0.00001"),
        (1e-6, "1e-6"),
        (-2.5e300, "-2.5e300"),
        (1.5e23, "1.5e23"),
        (123456789.125, "123456789.125"),
        (5e-324, "5e-324"),
    ],
)
def test_floats_are_written_as_serde_writes_them(value, text):
    assert serde_float(value) == text


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_serde_floats_read_back_to_the_same_value(value):
    assert float(serde_float(value)) == value


def test_missing_times_take_the_load_time():
    issues = parse_issues(b'{"id":"a","title":"t"}\n', "t", NOW_TEXT, tolerate_torn_tail=False)
    assert (issues["a"]["created_at"], issues["a"]["updated_at"]) == (NOW_TEXT, NOW_TEXT)


REFERENCE_ROWS = [
    b'{"id":"bd-231","title":"[Tusk/CLI] Add queue/render/state-view witness enforcement",'
    b'"description":"Restored from corruption backup; original runtime witness enforcement task.",'
    b'"notes":"Restored from .premath/issues.jsonl.corrupt.backup during placeholder '
    b'reconciliation (bd-278).","status":"closed","priority":2,"issue_type":"task",'
    b'"assignee":"codex",'
    b'"created_at":"2026-02-23T22:43:44.586389Z","updated_at":"2026-02-23T23:13:30.031575Z",'
    b'"closed_at":"2026-02-23T22:43:44.586389Z","ephemeral":false,"dependencies":[{"issue_id":'
    b'"bd-231","depends_on_id":"bd-220","type":"blocks"}]}\n',
    b'{"id":"bd200-smoke-1","title":"smoke epic","notes":"Temporary smoke issue created during '
    b'bd-200 reproduction; closed for queue hygiene.","status":"closed","priority":2,'
    b'"issue_type":"task","created_at":"2026-02-23T03:33:09.338421Z",'
    b'"updated_at":"2026-02-23T03:35:53.292802Z","closed_at":"2026-02-23T03:35:53.292804Z",'
    b'"ephemeral":false}\n',
]


def test_rows_of_the_reference_repository_round_trip_byte_for_byte():
    """The verbatim sample rows of the reference's committed store (reference §A1)."""
    data = b"".join(REFERENCE_ROWS)
    issues = parse_issues(data, "t.jsonl", NOW_TEXT, tolerate_torn_tail=False)
    assert encode_store(issues) == data


@pytest.mark.parametrize(
    ("stamp", "stored"),
    [
        ("2026-01-01T23:59:59.100Z", True),
        ("2026-01-01T00:00:00.123456789Z", True),
        ("2026-01-01T00:00:00.000001Z", True),
        ("2016-12-31T23:59:60Z", True),
        ("2024-02-29T00:00:00Z", True),
        ("2000-02-29T00:00:00Z", True),
        ("2400-02-29T00:00:00Z", True),
        ("2100-02-29T00:00:00Z", False),
        ("2026-02-29T00:00:00Z", False),
        ("2026-04-31T00:00:00Z", False),
        ("2026-13-01T00:00:00Z", False),
        ("2026-01-01T24:00:00Z", False),
        ("2026-01-01T23:59:61Z", False),
        ("2026-01-01T23:59:59.1Z", False),
        ("2026-01-01T23:59:59.000Z", False),
        ("2026-01-01T23:59:59.100000Z", False),
        ("2026-01-01T23:59:59.123456000Z", False),
        ("2026-01-01T00:00:00+00:00", False),
        ("2026-01-01T00:00:00Z\n2026-01-01T00:00:00Z", False),
    ],
)
def test_batch_and_line_stamp_checks_match_the_stored_form(stamp, stored):
    assert stamps_are_stored(["2026-01-01T00:00:00Z", stamp]) is stored
    assert stamps_are_stored([stamp]) is stored
    assert text_is_stored(_row_line(stamp) + b"\n") is stored


def _stored_shape(issue_id: str, created_at: str, title: str = "t") -> bytes:
    return orjson.dumps(
        {"id": issue_id, "title": title, "status": "open", "priority": 2, "issue_type": "task",
         "created_at": created_at, "updated_at": "2026-02-22T00:00:00Z", "ephemeral": False}
    ) + b"\n"  # fmt: skip


def test_rows_in_stored_shape_with_other_time_forms_are_normalised():
    """The fast path takes the shape; the batched time check sends the row to `check_row`."""
    data = (
        _stored_shape("a", "2026-02-22T00:00:00Z")
        + _stored_shape("b", "2026-02-22T01:00:00+01:00")
        + _stored_shape("c", "2026-02-22T00:00:00.500000Z")
        + _stored_shape("b", "2026-02-22T00:00:00Z", title="last wins")
    )
    issues = parse_issues(data, "t.jsonl", NOW_TEXT, tolerate_torn_tail=False)
    assert {k: (v["title"], v["created_at"]) for k, v in issues.items()} == {
        "a": ("t", "2026-02-22T00:00:00Z"),
        "b": ("last wins", "2026-02-22T00:00:00Z"),
        "c": ("t", "2026-02-22T00:00:00.500Z"),
    }
    bad = _stored_shape("a", "2026-02-22T00:00:00Z") + _stored_shape("b", "2026-02-30T00:00:00Z")
    with pytest.raises(PremathError, match=r"t\.jsonl: line 2: parse error: invalid RFC 3339"):
        parse_issues(bad, "t.jsonl", NOW_TEXT, tolerate_torn_tail=False)


def test_lines_are_trimmed_as_rust_trims():
    row = _stored_shape("a", "2026-02-22T00:00:00Z").strip().decode()
    data = f"\u00a0{row}\u2028\n\u3000\n  # comment\n\t{row.replace('a', 'a', 1)}  \n".encode()
    issues = parse_issues(data, "t.jsonl", NOW_TEXT, tolerate_torn_tail=False)
    assert list(issues) == ["a"]


def test_the_first_bad_line_is_reported_even_across_both_paths():
    data = _stored_shape("a", "2026-02-30T00:00:00Z") + b'{"id":"b"}\n'
    with pytest.raises(PremathError, match=r"line 1: parse error: invalid RFC 3339"):
        parse_issues(data, "t.jsonl", NOW_TEXT, tolerate_torn_tail=False)


# --- the written-text fast path (`text_is_stored`) and splicing rewrites -----------------------


def _row_line(created_at: str) -> bytes:
    return _stored_shape("a", created_at).rstrip(b"\n")


def test_written_lines_refuse_what_is_not_our_bytes():
    line = _row_line("2026-02-22T00:00:00Z")
    assert text_is_stored(line + b"\n" + line + b"\n")
    assert not text_is_stored(line + b"\n" + line)
    assert not text_is_stored(line + b"\n\n" + line)
    for other in (
        line.replace(b'"title":"t"', b'"title": "t"'),
        line.replace(b'"title":"t"', b'"title":"\\u0074"'),
        line.replace(b'"title":"t"', b'"title":"a\\/b"'),
        line.replace(b'"title":"t"', b'"title":""'),
        line.replace(b'"priority":2', b'"priority":-0'),
        line.replace(b'"priority":2', b'"priority":2.0'),
        line.replace(b'"priority":2', b'"priority":2147483647'),
        line + b" ",
    ):
        assert not text_is_stored(line + b"\n" + other + b"\n"), other


ESCAPED = st.text(alphabet='ab"\\\n\t\x01\x1f/é\u2028', min_size=1, max_size=4)


@st.composite
def perturbed_line(draw):
    """A stored row's line, sometimes with bytes inserted, replaced or escaped differently."""
    value = draw(near_stored())
    if draw(st.booleans()):
        value = {**value, "title": draw(ESCAPED)}
    line = orjson.dumps(value)
    if draw(st.booleans()) and len(line) > 2:
        position = draw(st.integers(1, len(line) - 1))
        insert = draw(st.sampled_from([b" ", b"\\/", b"\\u0061", b"\\u001F", b"0", b'"', b"\\"]))
        line = line[:position] + insert + line[position + draw(st.integers(0, 1)) :]
    return value, line


@given(perturbed_line())
def test_written_lines_are_rows_the_checker_leaves_unchanged(case):
    _, line = case
    if not text_is_stored(line + b"\n"):
        return
    value = orjson.loads(line)
    stamps: list[str] = []
    assert stored_row_or_none(value, stamps) is value
    assert stamps_are_stored(stamps)
    assert orjson.dumps(check_row(value, NOW_TEXT)) == line


@given(st.lists(st.one_of(row_like(), near_stored()), max_size=5), st.booleans())
def test_every_load_path_reads_the_same_store(values, sort):
    lines = [orjson.dumps(v) for v in values]
    data = b"".join(line + b"\n" for line in (sorted(lines) if sort else lines))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(issues_file, "_WRITTEN_CHECK_LINES", 10**9)
        try:
            expected = encode_store(
                parse_issues(data, "t.jsonl", NOW_TEXT, tolerate_torn_tail=False)
            )
        except PremathError as exc:
            expected = str(exc)
        patch.setattr(issues_file, "_WRITTEN_CHECK_LINES", 0)
        try:
            got = encode_store(parse_issues(data, "t.jsonl", NOW_TEXT, tolerate_torn_tail=False))
        except PremathError as exc:
            got = str(exc)
        with tempfile.TemporaryDirectory() as folder:  # the file path: the check on a 2nd core
            path = Path(folder) / "t.jsonl"
            path.write_bytes(data)
            try:
                loaded = encode_store(load_issues(str(path), NOW, tolerate_torn_tail=False))
            except PremathError as exc:
                loaded = str(exc).replace(str(path), "t.jsonl")
    assert got == expected
    assert loaded == expected


def _written_store(count: int) -> bytes:
    rows = []
    for number in range(1, count + 1):
        row = {"id": f"bd-{number:03}", "title": f"t{number}", "status": "open", "priority": 2,
               "issue_type": "task", "created_at": "2026-02-22T00:00:00.123456Z",
               "updated_at": "2026-02-22T00:00:00Z", "closed_at": "2026-02-22T00:00:00.500Z",
               "ephemeral": False}  # fmt: skip
        if number % 3 == 0:
            row["status"] = "closed"
        if number > 1:
            row["dependencies"] = [
                {"issue_id": row["id"], "depends_on_id": f"bd-{number - 1:03}", "type": "related"}
            ]
        rows.append(orjson.dumps(row) + b"\n")
    return b"".join(rows)


@pytest.mark.parametrize("threshold", [0, 10**9])
def test_single_row_writers_splice_the_same_bytes_a_full_rewrite_writes(
    tmp_path, monkeypatch, threshold
):
    from datetime import UTC, datetime

    from premath.issues import memory

    monkeypatch.setattr(issues_file, "_WRITTEN_CHECK_LINES", threshold)
    path = str(tmp_path / "issues.jsonl")
    Path(path).write_bytes(_written_store(30))
    now = datetime(2026, 3, 1, 10, 0, 0, 123456, tzinfo=UTC)
    memory.claim_next(path, "w", now=now, timeout_s=1)
    memory.update_issue(path, "bd-010", now=now, timeout_s=1, notes="n", status="closed")
    memory.dep_add(path, "bd-030", "bd-001", kind="blocks", created_by="me", now=now, timeout_s=1)
    memory.add_issue(path, "new", now=now, timeout_s=1)
    data = Path(path).read_bytes()
    assert encode_store(parse_issues(data, path, NOW_TEXT, tolerate_torn_tail=False)) == data
    assert hashlib.sha256(data).hexdigest() == SPLICED_STORE_DIGEST


def test_edges_with_a_null_creator_or_a_list_type_are_refused():
    for edge, message in (
        ({"created_by": None}, "invalid type: null, expected a string"),
        ({"type": []}, "invalid type: sequence, expected a dependency type"),
    ):
        row = orjson.loads(_stored_shape("a", "2026-02-22T00:00:00Z"))
        row["dependencies"] = [{"issue_id": "a", "depends_on_id": "b", "type": "blocks", **edge}]
        with pytest.raises(PremathError, match=re.escape(message)):
            parse_issues(orjson.dumps(row) + b"\n", "t.jsonl", NOW_TEXT, tolerate_torn_tail=False)


@given(st.lists(near_stored(), max_size=6), st.sampled_from(["claim-next", "update", "dep"]))
def test_splicing_writes_what_a_full_rewrite_writes(values, action):
    import tempfile
    from datetime import UTC, datetime

    from premath.issues import memory

    try:
        issues = parse_issues(
            b"".join(orjson.dumps(v) + b"\n" for v in values),
            "t",
            NOW_TEXT,
            tolerate_torn_tail=False,
        )
    except PremathError:
        return
    store = encode_store(issues)
    now = datetime(2026, 3, 1, 10, 0, 0, 123456, tzinfo=UTC)
    first, last = min(issues, default="a"), max(issues, default="a")
    written = []
    for threshold in (0, 10**9):
        with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as patch:
            patch.setattr(issues_file, "_WRITTEN_CHECK_LINES", threshold)
            path = f"{folder}/issues.jsonl"
            Path(path).write_bytes(store)
            with contextlib.suppress(PremathError):
                if action == "claim-next":
                    memory.claim_next(path, "w", now=now, timeout_s=1)
                elif action == "update":
                    memory.update_issue(path, first, now=now, timeout_s=1, status="closed")
                else:
                    memory.dep_add(
                        path, first, last, kind="blocks", created_by="", now=now, timeout_s=1
                    )
            written.append(Path(path).read_bytes())
    assert written[0] == written[1]


def test_the_pydantic_model_states_the_field_table():
    from premath.models.issue_row import FIELD_ORDER

    assert tuple(IssueModel.model_fields) == FIELD_ORDER
