"""`issue backend-status`: the jj block with and without `jj` on PATH, and the store's error.

`jj` itself is not installable here (no Debian 12 package, no PyPI or npm distribution), so the
ready and error states run a script named `jj` that answers as jj does; the corpus covers the
`unavailable` state with no `jj` at all.
"""

import os
import stat
from pathlib import Path

import pytest

from tests.support.cli import invoke

FAKE_JJ = """#!/bin/sh
case "$1" in
  --version) echo "jj 0.23.0" ;;
  root) {root} ;;
  log) echo "  qpvuntsm  " ;;
esac
"""


def _jj_on_path(monkeypatch: pytest.MonkeyPatch, folder: Path, root: str) -> None:
    folder.mkdir()
    script = folder / "jj"
    script.write_text(FAKE_JJ.format(root=root))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")


def test_jj_ready_reports_the_root_and_the_change_at_head(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _jj_on_path(monkeypatch, tmp_path / "bin", f"echo {tmp_path}")
    result = invoke("issue", "backend-status", "--json")
    assert result.json["jj"] == {
        "state": "ready",
        "available": True,
        "repoRoot": str(tmp_path),
        "headChangeId": "qpvuntsm",
        "error": None,
    }
    text = invoke("issue", "backend-status").stdout
    assert f"  jj state: ready\n  jj repo root: {tmp_path}\n  jj head change: qpvuntsm\n" in text


def test_a_failing_jj_command_is_an_error_state(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _jj_on_path(monkeypatch, tmp_path / "bin", "echo 'Error: no repo' >&2; exit 1")
    result = invoke("issue", "backend-status", "--json")
    assert (result.exit_code, result.json["jj"]) == (
        0,
        {
            "state": "error",
            "available": True,
            "repoRoot": None,
            "headChangeId": None,
            "error": "jj command failed: jj root (Error: no repo)",
        },
    )


def test_an_unreadable_store_is_reported_not_raised(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path(".premath").mkdir()
    Path(".premath/issues.jsonl").write_bytes(b'{"id":"a"}\x00\n')
    result = invoke("issue", "backend-status", "--json")
    assert result.exit_code == 0
    assert result.json["canonicalMemory"]["error"] == (
        "corrupted substrate: .premath/issues.jsonl: contains NUL byte(s)"
    )
    Path(".premath/issues.jsonl").write_bytes(b"")
    assert invoke("issue", "backend-status", "--json").json["canonicalMemory"]["snapshotRef"] == (
        "iss1_e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )
