"""The issue event log: migrate and replay round trips, bad logs, replay mismatches, crashes."""

import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from premath.errors import PremathError
from premath.issues.events import migrate_events, replay_events
from premath.store.issues_file import encode_store
from tests.support.cli import invoke

NOW = datetime(2026, 3, 1, 10, 0, 0, 123456, tzinfo=UTC)
TEXT = st.text(alphabet='ab \n\u00e9"\\', max_size=4)
IDS = st.text(alphabet="ab-1\u00e9", min_size=1, max_size=3)
STAMPS = st.sampled_from(
    ["2026-02-22T00:00:00Z", "2026-02-22T00:00:01.500Z", "2026-02-23T03:33:09.338421Z"]
)
KINDS = st.sampled_from(["blocks", "related", "parent-child", "discovered-from"])
METADATA = st.none() | st.dictionaries(
    st.sampled_from(["b", "a"]), st.floats(allow_nan=False, allow_infinity=False) | TEXT
)


@st.composite
def stores(draw, *, canonical_edges: bool = True):
    """Valid stores in our bytes. With `canonical_edges`, each edge list is sorted and has one
    edge per (target, type) pointing at an existing issue: what a replay rebuilds exactly."""
    ids = draw(st.lists(IDS, unique=True, max_size=6))
    rows = {}
    for issue_id in ids:
        row: dict = {"id": issue_id, "title": draw(TEXT)}
        if description := draw(TEXT):
            row["description"] = description
        row |= {
            "status": draw(st.sampled_from(["open", "closed", "in_progress"])),
            "priority": draw(st.integers(-3, 4)),
            "issue_type": draw(st.sampled_from(["task", "epic"])),
            "created_at": draw(STAMPS),
            "updated_at": draw(STAMPS),
            "ephemeral": draw(st.booleans()),
        }
        if labels := draw(st.lists(TEXT.filter(bool), max_size=2)):
            row["labels"] = labels
        targets = draw(st.lists(st.tuples(st.sampled_from(ids), KINDS, TEXT), max_size=3))
        if canonical_edges:
            unique = {(target, kind): by for target, kind, by in targets}
            targets = sorted((t, k, by) for (t, k), by in unique.items())
        edges = []
        for target, kind, created_by in targets:
            edge = {"issue_id": issue_id, "depends_on_id": target, "type": kind}
            if created_by:
                edge["created_by"] = created_by
            edges.append(edge)
        if edges:
            row["dependencies"] = edges
        if (metadata := draw(METADATA)) is not None:
            row["metadata"] = dict(sorted(metadata.items()))
        rows[issue_id] = row
    return encode_store(rows)


@settings(max_examples=60, deadline=None)
@given(stores())
def test_random_stores_migrate_and_replay_to_the_same_bytes(store):
    with tempfile.TemporaryDirectory() as folder:
        source, events, rebuilt = (f"{folder}/{name}" for name in ("a.jsonl", "e.jsonl", "b.jsonl"))
        Path(source).write_bytes(store)
        migrated = migrate_events(source, events, now=NOW)
        replayed = replay_events(events, rebuilt, None, now=NOW, timeout_s=5)
        assert Path(rebuilt).read_bytes() == store
        assert (replayed.issue_count, replayed.event_count) == (
            migrated.issue_count,
            migrated.event_count,
        )
        again = replay_events(events, source, None, now=NOW, timeout_s=5)
        assert (again.equivalent_to_existing, again.difference) == (True, None)
        assert Path(source).read_bytes() == store


@settings(max_examples=60, deadline=None)
@given(stores(canonical_edges=False))
def test_any_store_migrates_to_an_equivalent_log_or_is_refused_untouched(store):
    with tempfile.TemporaryDirectory() as folder:
        source, events = f"{folder}/a.jsonl", f"{folder}/e.jsonl"
        Path(source).write_bytes(store)
        Path(events).write_bytes(b"old\n")
        refused = None
        try:
            migrate_events(source, events, now=NOW)
        except PremathError as exc:
            refused = exc.message
        if refused is not None:
            # Repeated (target, type) edges collapse on replay; dangling edges never resolve.
            assert "mismatch" in refused or "unresolved dependency" in refused
            assert Path(events).read_bytes() == b"old\n"
            assert sorted(os.listdir(folder)) == ["a.jsonl", "e.jsonl"]
            return
        report = replay_events(events, source, None, now=NOW, timeout_s=5)
        assert report.equivalent_to_existing is True
        assert Path(source).read_bytes() == store


def test_a_malformed_event_names_the_file_and_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    good = (
        b'{"event_id":"issue.upsert:a","issue_id":"a","occurred_at":"2026-02-22T00:00:00Z",'
        b'"action":"upsert_issue","issue":{"id":"a","title":"A"}}'
    )
    Path("log.jsonl").write_bytes(good + b"\n# note\n" + b'{"event_id":"x","issue_id":"a"}\n')
    result = invoke("issue", "replay-events", "--events", "log.jsonl", "--json")
    assert result.exit_code == 1
    assert result.json["error"]["message"] == (
        "failed to load log.jsonl: line 3: parse error: missing field `occurred_at`"
    )
    assert sorted(os.listdir()) == ["log.jsonl"]


def test_a_replay_error_after_a_malformed_line_reports_the_line(tmp_path, monkeypatch):
    """The reference reads the whole log before replaying: a bad line wins over a replay error."""
    monkeypatch.chdir(tmp_path)
    wrong_id = (
        b'{"event_id":"e","issue_id":"b","occurred_at":"2026-02-22T00:00:00Z",'
        b'"action":"upsert_issue","issue":{"id":"a","title":"A"}}\n'
    )
    Path("log.jsonl").write_bytes(wrong_id + b"{not json\n")
    result = invoke("issue", "replay-events", "--events", "log.jsonl", "--json")
    assert "line 2: parse error" in result.json["error"]["message"]
    Path("log.jsonl").write_bytes(wrong_id)
    result = invoke("issue", "replay-events", "--events", "log.jsonl", "--json")
    assert result.exit_code == 1
    assert result.json["error"]["message"] == (
        "failed to replay log.jsonl: replay issue-id mismatch for event e: envelope=b, payload=a"
    )


def test_a_differing_store_is_rewritten_and_the_first_difference_named(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    row = {"id": "bd-1", "title": "One", "status": "open", "priority": 2, "issue_type": "task",
           "created_at": "2026-02-22T00:00:00Z", "updated_at": "2026-02-22T00:00:00Z",
           "ephemeral": False}  # fmt: skip
    Path(".premath").mkdir()
    Path(".premath/issues.jsonl").write_bytes(orjson.dumps(row) + b"\n")
    assert invoke("issue", "migrate-events").exit_code == 0
    Path(".premath/issues.jsonl").write_bytes(orjson.dumps({**row, "title": "Two"}) + b"\n")
    result = invoke("issue", "replay-events", "--json")
    assert (result.exit_code, result.json["equivalentToExisting"]) == (0, False)
    assert result.json["firstDifference"] == {
        "issueId": "bd-1", "inExisting": True, "inReplay": True, "field": "title",
    }  # fmt: skip
    assert Path(".premath/issues.jsonl").read_bytes() == orjson.dumps(row) + b"\n"
    text = invoke("issue", "replay-events", "--cache", "other.json").stdout
    assert "Equivalent to existing: true" in text
    assert "First difference" not in text


def test_the_replay_cache_is_the_references_bytes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("log.jsonl").write_bytes(
        b'{"schema":"issue.event.v1","event_id":"issue.upsert:bd-1","issue_id":"bd-1",'
        b'"occurred_at":"2026-02-22T00:00:00Z","action":"upsert_issue","issue":{"id":"bd-1",'
        b'"title":"One","status":"open","priority":2,"issue_type":"task",'
        b'"created_at":"2026-02-22T00:00:00Z","updated_at":"2026-02-22T00:00:00Z",'
        b'"ephemeral":false}}\n'
    )
    invoke("issue", "replay-events", "--events", "log.jsonl", "--issues", "flat.jsonl")
    assert Path("replay-cache.json").read_bytes() == (
        b'{\n  "schema": "issue.replay.cache.v1",\n  "eventsPath": "log.jsonl",\n'
        b'  "issuesPath": "flat.jsonl",\n  "eventStreamRef": '
        b'"ev1_2880436c4a053c0f20ccc6de214e28b380f34bf8529641ac067bc064ec7d44c9",\n'
        b'  "snapshotRef": "iss1_46f673048986448c4d11f166c2005cb6b185ca6ddd6a5e34eb60b103cdc6cb2f",'
        b'\n  "eventCount": 1,\n  "issueCount": 1\n}'
    )


def _random_log(rng: random.Random, issues: int, updates: int) -> bytes:
    lines = []
    for number in range(updates):
        issue_id = f"bd-{rng.randrange(issues)}"
        if number % 4 == 3:
            target = f"bd-{rng.randrange(issues)}"
            lines.append(
                orjson.dumps(
                    {
                        "event_id": f"e{number}",
                        "issue_id": issue_id,
                        "occurred_at": "2026-02-22T00:00:00Z",
                        "action": "add_dependency",
                        "depends_on_id": target,
                        "type": rng.choice(["blocks", "related"]),
                    }
                )
            )
            continue
        row = {
            "id": issue_id,
            "title": f"t{number}",
            "status": rng.choice(["open", "closed"]),
            "created_at": "2026-02-22T00:00:00Z",
            "updated_at": f"2026-02-22T00:00:{rng.randrange(60):02d}.{rng.randrange(1, 9)}Z",
        }
        lines.append(
            orjson.dumps(
                {
                    "event_id": f"e{number}",
                    "issue_id": issue_id,
                    "occurred_at": row["updated_at"],
                    "action": "upsert_issue",
                    "issue": row,
                }
            )
        )
    # every edge's ends exist: each issue is upserted once more at the end
    lines.extend(
        orjson.dumps(
            {
                "event_id": f"last{n}",
                "issue_id": f"bd-{n}",
                "occurred_at": "2026-02-23T00:00:00Z",
                "action": "upsert_issue",
                "issue": {
                    "id": f"bd-{n}",
                    "title": "last",
                    "created_at": "2026-02-22T00:00:00Z",
                    "updated_at": "2026-02-23T00:00:00Z",
                },
            }
        )
        for n in range(issues)
    )
    return b"\n".join(lines) + b"\n"


def _replay_argv(folder: Path) -> list[str]:
    return [sys.executable, "-m", "premath", "issue", "replay-events", "--events",
            str(folder / "log.jsonl"), "--issues", str(folder / "store/issues.jsonl")]  # fmt: skip


@pytest.mark.slow
def test_a_replay_killed_at_a_random_point_then_rerun_writes_the_same_store(tmp_path):
    rng = random.Random(14)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    for attempt in range(6):
        log = _random_log(rng, issues=rng.randrange(200, 3000), updates=rng.randrange(1000, 20000))
        expected_dir, killed_dir = tmp_path / f"x{attempt}", tmp_path / f"k{attempt}"
        for folder in (expected_dir, killed_dir):
            folder.mkdir()
            (folder / "log.jsonl").write_bytes(log)
        started = time.monotonic()
        subprocess.run(_replay_argv(expected_dir), env=env, check=True, capture_output=True)
        full_s = time.monotonic() - started
        expected = (expected_dir / "store/issues.jsonl").read_bytes()
        for _ in range(3):
            child = subprocess.Popen(
                _replay_argv(killed_dir), env=env,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            time.sleep(rng.uniform(0.0, full_s))
            child.send_signal(signal.SIGKILL)
            child.wait()
            store, cache = killed_dir / "store/issues.jsonl", killed_dir / "store/replay-cache.json"
            # Both are published by rename: absent, or complete.
            assert not store.exists() or store.read_bytes() == expected
            assert not cache.exists() or orjson.loads(cache.read_bytes())["issueCount"] > 0
        done = subprocess.run(_replay_argv(killed_dir), env=env, capture_output=True)
        assert done.returncode == 0, done.stderr
        assert (killed_dir / "store/issues.jsonl").read_bytes() == expected
        cache = (killed_dir / "store/replay-cache.json").read_bytes()
        assert cache == (expected_dir / "store/replay-cache.json").read_bytes().replace(
            str(expected_dir).encode(), str(killed_dir).encode()
        )
        leftovers = [n for n in os.listdir(killed_dir / "store") if ".tmp." in n]
        assert leftovers == []
