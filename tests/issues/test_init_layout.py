"""`premath init`: the layout, beads stores read as canonical rows, refusals writing nothing."""

import os
from pathlib import Path

from tests.support.cli import invoke

BEADS_ROWS = (
    # what `bd` writes: Go's RFC3339Nano times (local offsets, trimmed fractions), its own types,
    # fields premath does not know, edge timestamps, deletion tombstones
    b'{"id":"bd-1","title":"Legacy","status":"open","created_at":"2026-02-22T00:00:00Z",'
    b'"updated_at":"2026-02-22T00:00:00Z"}\n'
    b'{"id":"bd-2","title":"Bug","description":"d","status":"open","priority":1,'
    b'"issue_type":"bug","created_at":"2025-10-16T15:13:01.1234-07:00",'
    b'"updated_at":"2025-10-16T15:13:01.5Z","closed_at":null,"estimated_minutes":30,'
    b'"comments":[{"text":"x"}],"dependencies":[{"issue_id":"bd-2","depends_on_id":"bd-1",'
    b'"type":"blocks","created_at":"2025-10-16T15:13:01Z","created_by":"me"},'
    b'{"issue_id":"bd-2","depends_on_id":"bd-1","type":"tracks"}]}\n'
    b'{"id":"bd-3","title":"Gone","status":"tombstone","deleted_at":"2025-10-17T00:00:00Z"}\n'
    b'{"title":"no id"}\n'
    b'{"id":"bd-4","title":"Bad time","created_at":"yesterday","updated_at":"yesterday"}\n'
)


def test_a_beads_store_becomes_canonical_rows_and_the_report_says_what_was_dropped(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    Path(".beads").mkdir()
    Path(".beads/issues.jsonl").write_bytes(BEADS_ROWS)
    result = invoke("init", "--json")
    assert result.exit_code == 0
    assert result.json["migratedFromLegacy"] == "./.beads/issues.jsonl"
    assert result.json["legacyImport"] == {
        "keptRows": 2,
        "droppedRows": [
            {"line": 3, "id": "bd-3", "reason": "deleted in beads"},
            {"line": 4, "id": None, "reason": "missing field `id`"},
            {
                "line": 5,
                "id": "bd-4",
                "reason": 'invalid RFC 3339 date and time "yesterday" (field `created_at`)',
            },
        ],
        "droppedFields": {
            "comments": 1,
            "dependencies[].created_at": 1,
            "dependencies[type=tracks]": 1,
            "estimated_minutes": 1,
        },
        "convertedValues": {"issue_type: bug -> task": 1},
    }
    assert Path(".premath/issues.jsonl").read_bytes() == (
        b'{"id":"bd-1","title":"Legacy","status":"open","priority":2,"issue_type":"task",'
        b'"created_at":"2026-02-22T00:00:00Z","updated_at":"2026-02-22T00:00:00Z",'
        b'"ephemeral":false}\n'
        b'{"id":"bd-2","title":"Bug","description":"d","status":"open","priority":1,'
        b'"issue_type":"task","created_at":"2025-10-16T22:13:01.123400Z",'
        b'"updated_at":"2025-10-16T15:13:01.500Z","ephemeral":false,"dependencies":'
        b'[{"issue_id":"bd-2","depends_on_id":"bd-1","type":"blocks","created_by":"me"}]}\n'
    )
    assert Path(".beads/issues.jsonl").read_bytes() == BEADS_ROWS
    again = invoke("init")
    assert again.exit_code == 0
    assert "created issues file: no" in again.stdout
    assert "legacy" not in again.stdout


def test_the_text_report_counts_kept_and_dropped_rows(tmp_path):
    (tmp_path / "r/.beads").mkdir(parents=True)
    (tmp_path / "r/.beads/issues.jsonl").write_bytes(BEADS_ROWS)
    result = invoke("init", str(tmp_path / "r"))
    assert "  legacy rows kept: 2\n  legacy rows dropped: 3\n" in result.stdout
    assert "    - line 3 (bd-3): deleted in beads\n" in result.stdout


def test_a_beads_file_that_is_not_json_lines_is_refused_and_nothing_is_written(tmp_path):
    root = tmp_path / "repo"
    (root / ".beads").mkdir(parents=True)
    (root / ".beads/issues.jsonl").write_bytes(b'{"id":"a","title":"t"}\nnot even json\n')
    result = invoke("init", str(root), "--json")
    assert result.exit_code == 1
    assert result.json["error"]["message"] == (
        f"legacy store {root}/.beads/issues.jsonl is not JSON lines: line 2: expected ident at "
        "line 1 column 2; nothing was written: fix or move the file, then run init again"
    )
    assert sorted(os.listdir(root)) == [".beads"]


def test_init_on_a_file_is_refused_and_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("afile").write_text("x\n")
    result = invoke("init", "afile", "--json")
    assert (result.exit_code, result.json["error"]["message"]) == (
        1,
        "init path is not a directory: afile",
    )
    assert sorted(os.listdir()) == ["afile"]


def test_paths_are_joined_as_the_reference_joins_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("init", "a/", "--json")
    assert (result.json["premathDir"], result.json["issuesPath"]) == (
        "a/.premath",
        "a/.premath/issues.jsonl",
    )
    assert Path("a/.premath/issues.jsonl").read_bytes() == b""
