"""`iss1_` refs: the reference's worked examples (harness-cli.md §1.6) and the float corpus case."""

import pytest

from premath.issues.snapshot import issues_snapshot_ref

TWO_ISSUES = (
    '{"id":"bd-a","title":"Issue A","status":"open","created_at":"2026-02-22T00:00:00Z",'
    '"updated_at":"2026-02-22T00:00:00Z"}\n'
    '{"id":"bd-b","title":"Issue B","status":"closed","created_at":"2026-02-22T00:00:00Z",'
    '"updated_at":"2026-02-22T00:00:00Z"}\n'
)
OFFSET_AND_EDGE = (
    '{"id":"bd-a","title":"Issue A","created_at":"2026-02-22T00:00:00.500+01:00",'
    '"updated_at":"2026-02-22T00:00:00Z","dependencies":[{"issue_id":"bd-a",'
    '"depends_on_id":"bd-b","type":"blocks"}]}\n'
    '{"id":"bd-b","title":"Issue B","status":"closed","created_at":"2026-02-22T00:00:00Z",'
    '"updated_at":"2026-02-22T00:00:00Z"}\n'
)
FLOAT_METADATA = (
    '{"id":"bd-1","title":"Floats","created_at":"2026-02-22T00:00:00Z",'
    '"updated_at":"2026-02-22T00:00:00Z","metadata":{"big":1e16,"small":1.5e-7,"tenth":0.1,'
    '"whole":2.0,"neg":-0.0,"int":12345678901234567890}}\n'
)
EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (TWO_ISSUES, "iss1_d1a09f4e7c6222a1ff157cf304cea1b0bc07d701c4971e222c5f6147f379fd44"),
        (OFFSET_AND_EDGE, "iss1_160d43ea833619d5cd15f01f639420e044de973edd83e1d3bbc03553683961d3"),
        (FLOAT_METADATA, "iss1_0f6887e0900cbd208c4abc8d58952f09d070210d169078e015e03e901f366384"),
        ("", f"iss1_{EMPTY_SHA256}"),
        ("\n# only a comment\n   \n", f"iss1_{EMPTY_SHA256}"),
    ],
)
def test_snapshot_ref_matches_reference(tmp_path, text, expected):
    path = tmp_path / "issues.jsonl"
    path.write_text(text, encoding="utf-8")
    assert issues_snapshot_ref(str(path)) == expected


def test_row_order_and_duplicates_do_not_change_the_ref(tmp_path):
    lines = TWO_ISSUES.splitlines(keepends=True)
    shuffled = tmp_path / "shuffled.jsonl"
    shuffled.write_text(
        lines[1] + '{"id":"bd-a","title":"stale copy","created_at":"2026-01-01T00:00:00Z",'
        '"updated_at":"2026-01-01T00:00:00Z"}\n' + lines[0],
        encoding="utf-8",
    )
    assert issues_snapshot_ref(str(shuffled)) == (
        "iss1_d1a09f4e7c6222a1ff157cf304cea1b0bc07d701c4971e222c5f6147f379fd44"
    )


@pytest.mark.parametrize(
    "content",
    [
        b'{"id":"bd-1","title":"x"\0}\n',
        b'{"id":"bd-1","title":"\xff"}\n',
        b'{"id":"bd-1"}\n',
        b'{"id":"bd-1","title":"x","issue_type":"bug"}\n',
        b'{"id":"bd-1","title":"x","created_at":"yesterday"}\n',
        b"not json\n",
    ],
)
def test_unloadable_store_has_no_ref(tmp_path, content):
    path = tmp_path / "issues.jsonl"
    path.write_bytes(content)
    assert issues_snapshot_ref(str(path)) is None


def test_missing_path_or_folder_has_no_ref(tmp_path):
    assert issues_snapshot_ref(str(tmp_path / "absent.jsonl")) is None
    assert issues_snapshot_ref(str(tmp_path)) is None
    assert issues_snapshot_ref("") is None
