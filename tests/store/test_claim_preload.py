"""A claim on a small store reads it before taking the lock and, under the lock, only brings
that read up to date: what other writers changed meanwhile is seen, and only the claimed row
is encoded while every other writer waits (issue 33, the 16-claimer drain)."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
import pytest

from premath.issues.memory import claim_next
from premath.store import issues_file
from premath.store.issues_file import encode_store, load_issues, lock_path

if TYPE_CHECKING:
    from premath.models.issue_row import IssueRow

T0 = datetime(2026, 2, 22, tzinfo=UTC)


def _store(path: Path, count: int) -> None:
    rows = [
        {"id": f"bd-{n:04d}", "title": f"Issue {n}", "status": "open", "priority": 2,
         "issue_type": "task", "created_at": "2026-02-22T00:00:00Z",
         "updated_at": "2026-02-22T00:00:00Z", "ephemeral": False}
        for n in range(1, count + 1)
    ]  # fmt: skip
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))


def test_under_the_lock_only_the_claimed_row_is_encoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "issues.jsonl"
    _store(store, 1000)
    marker = lock_path(store)
    encode_row = issues_file.encode_row
    under_lock: list[str] = []

    def counted(row: IssueRow) -> bytes:
        if os.path.exists(marker):
            under_lock.append(row["id"])
        return encode_row(row)

    monkeypatch.setattr(issues_file, "encode_row", counted)
    claimed = claim_next(str(store), "w1", now=T0, timeout_s=5)
    assert claimed is not None
    assert under_lock == ["bd-0001"]
    assert store.read_bytes() == encode_store(load_issues(str(store), T0))
    assert load_issues(str(store), T0)["bd-0001"]["assignee"] == "w1"
    assert not os.path.exists(marker)


def test_a_claim_made_between_the_read_and_the_lock_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "issues.jsonl"
    _store(store, 50)
    preload = issues_file.WarmStores.preload
    interleaved: list[IssueRow | None] = []

    def then_another_writer(self: issues_file.WarmStores, path: str, now: datetime) -> None:
        preload(self, path, now)
        if not interleaved:
            interleaved.append(None)  # the other writer's own read does not interleave again
            interleaved[0] = claim_next(path, "other", now=now, timeout_s=5)

    monkeypatch.setattr(issues_file.WarmStores, "preload", then_another_writer)
    mine = claim_next(str(store), "w1", now=T0, timeout_s=5)
    other = interleaved[0]
    assert other is not None
    assert mine is not None
    assert (other["id"], mine["id"]) == ("bd-0001", "bd-0002")
    issues = load_issues(str(store), T0)
    assert (issues["bd-0001"]["assignee"], issues["bd-0002"]["assignee"]) == ("other", "w1")
    assert sum(row.get("assignee") is not None for row in issues.values()) == 2
    assert store.read_bytes() == encode_store(issues)
