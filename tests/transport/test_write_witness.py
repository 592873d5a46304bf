"""The write witness: its fields, how it is attached to `metadata`, and the jj snapshot."""

import os
from datetime import UTC, datetime

import orjson
import pytest

from premath.clock import FrozenClock
from premath.mcp.tools import ServerConfig, ToolService
from premath.transport.write_witness import attach, jj_snapshot, write_witness

FAKE_JJ = """#!/bin/sh
case "$1" in
  root) echo; echo "$PWD" ;;
  log) printf 'kxyz\\n' ;;
  status) printf 'Working copy changes:\\nA file\\n' ;;
esac
"""


def test_witness_fields_and_metadata_attachment(tmp_path):
    witness = write_witness(
        action="issue.claim",
        issue_id="bd-1",
        issues_path=".premath/issues.jsonl",
        repo_root=str(tmp_path),
        mutation_policy="open",
        query_backend="jsonl",
        instruction=None,
        now_ns=1_795_000_000_123_456_789,
        jj=None,
    )
    assert witness["jjSnapshot"] is None
    assert (witness["witnessId"], witness["recordedAtUnixMs"]) == (
        "bdw1_1795000000123456789",
        1_795_000_000_123,
    )
    row = {"id": "bd-1", "metadata": {"z": 1, "a": {"y": 2, "b": 3}}}
    attach(row, witness)
    assert list(row["metadata"]) == ["a", "premathWriteWitness", "z"]
    assert list(row["metadata"]["a"]) == ["b", "y"]
    legacy = {"id": "bd-2", "metadata": [1, 2]}
    attach(legacy, witness)
    assert legacy["metadata"] == {"legacyMetadata": [1, 2], "premathWriteWitness": witness}
    bare = {"id": "bd-3"}
    attach(bare, witness)
    assert bare["metadata"] == {"premathWriteWitness": witness}


def _fake_jj_on_path(tmp_path, monkeypatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "jj").write_text(FAKE_JJ)
    (bin_dir / "jj").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def test_jj_snapshot_reads_root_change_and_status(tmp_path, monkeypatch):
    _fake_jj_on_path(tmp_path, monkeypatch)
    assert jj_snapshot(str(tmp_path)) == {
        "repoRoot": str(tmp_path),
        "changeId": "kxyz",
        "status": "Working copy changes:\nA file\n",
    }


@pytest.mark.parametrize("script", ["#!/bin/sh\nexit 1\n", None])
def test_jj_snapshot_is_null_when_jj_fails_or_is_missing(tmp_path, monkeypatch, script):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if script is not None:
        (bin_dir / "jj").write_text(script)
        (bin_dir / "jj").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir) + os.pathsep + "/usr/bin:/bin")
    assert jj_snapshot(str(tmp_path)) is None


def test_an_mcp_claim_carries_the_jj_snapshot_taken_before_the_lock(tmp_path, monkeypatch):
    _fake_jj_on_path(tmp_path, monkeypatch)
    store = tmp_path / "issues.jsonl"
    row = {"id": "bd-1", "title": "one", "status": "open", "priority": 2, "issue_type": "task",
           "created_at": "2026-02-22T00:00:00Z", "updated_at": "2026-02-22T00:00:00Z"}  # fmt: skip
    store.write_bytes(orjson.dumps(row) + b"\n")
    config = ServerConfig(issues_path=str(store), mutation_policy="open", repo_root=str(tmp_path))
    service = ToolService(config, FrozenClock(datetime(2026, 3, 1, tzinfo=UTC)))
    result = service.issue_claim_next({"assignee": "w"})
    snapshot = {
        "repoRoot": str(tmp_path),
        "changeId": "kxyz",
        "status": "Working copy changes:\nA file\n",
    }
    assert result["writeWitness"]["jjSnapshot"] == snapshot
    stored = orjson.loads(store.read_bytes())
    assert stored["metadata"]["premathWriteWitness"]["jjSnapshot"] == snapshot


def test_the_authority_looks_jj_up_on_path_once_a_second_not_once_a_write(tmp_path, monkeypatch):
    from premath.transport import write_witness as module

    looked: list[str] = []
    monkeypatch.setattr(module.shutil, "which", lambda name: looked.append(name))
    monkeypatch.setattr(module, "_jj_lookup", None)
    monkeypatch.setenv("PATH", "/nowhere")
    for _ in range(50):
        assert jj_snapshot(str(tmp_path)) is None
    assert looked == ["jj"]
    monkeypatch.setenv("PATH", "/elsewhere")  # a new PATH is looked at at once
    assert jj_snapshot(str(tmp_path)) is None
    assert looked == ["jj", "jj"]
