"""`issue_ready` answers from a view rendered once per store version and lease epoch: every
answer must be the bytes a fresh render gives at that moment, whatever the clock does and
whoever writes the file."""

import os
from datetime import UTC, datetime, timedelta

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from premath.clock import FrozenClock
from premath.mcp.server import call_tool
from premath.mcp.tools import ServerConfig, ToolService

START = datetime(2026, 2, 22, 12, 0, tzinfo=UTC)


def _stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _row(number: int, expiry_s: int | None, owner: str) -> dict[str, object]:
    row: dict[str, object] = {
        "id": f"bd-{number}",
        "title": f'Issue "{number}" "checkedAt": "x"',
        "status": "in_progress" if expiry_s is not None else "open",
        "priority": number % 3,
        "issue_type": "task",
        "created_at": "2026-02-22T00:00:00Z",
        "updated_at": "2026-02-22T00:00:00Z",
    }
    if expiry_s is not None:
        row["assignee"] = "worker"
        row["lease"] = {
            "lease_id": f"lease1_bd-{number}_{owner}",
            "owner": owner,
            "acquired_at": "2026-02-22T00:00:00Z",
            "expires_at": _stamp(START + timedelta(seconds=expiry_s)),
        }
    return row


def _write(path: str, rows: list[dict[str, object]]) -> None:
    temp = f"{path}.next"
    with open(temp, "wb") as handle:
        handle.write(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    os.replace(temp, path)


def _answer(service: ToolService) -> str:
    result = call_tool(service, "issue_ready", {})
    assert not result.is_error
    return result.content[0].text


def _fresh(path: str, clock: FrozenClock) -> str:
    return _answer(ToolService(ServerConfig(issues_path=path), FrozenClock(clock.now())))


leases = st.lists(st.one_of(st.none(), st.integers(-5, 5)), min_size=1, max_size=6).map(
    lambda expiries: [_row(n, e, "worker" if n % 2 else "other") for n, e in enumerate(expiries)]
)


@settings(max_examples=40, deadline=None)
@given(
    first=leases,
    second=leases,
    steps=st.lists(st.floats(-3, 3, allow_nan=False), min_size=1, max_size=12),
    rewrite_at=st.integers(0, 12),
)
def test_every_answer_is_a_fresh_render(tmp_path_factory, first, second, steps, rewrite_at):
    path = str(tmp_path_factory.mktemp("store") / "issues.jsonl")
    _write(path, first)
    clock = FrozenClock(START)
    service = ToolService(ServerConfig(issues_path=path), clock)
    assert _answer(service) == _fresh(path, clock)
    for index, seconds in enumerate(steps):
        if index == rewrite_at:
            _write(path, second)  # another process replaces the file between two calls
        clock.advance(seconds)
        assert _answer(service) == _fresh(path, clock)


def test_a_lease_expiring_between_calls_moves_to_stale(tmp_path):
    path = str(tmp_path / "issues.jsonl")
    _write(path, [_row(1, 2, "worker"), _row(2, None, "worker")])
    clock = FrozenClock(START)
    service = ToolService(ServerConfig(issues_path=path), clock)
    assert orjson.loads(_answer(service))["leaseProjection"]["staleIssueIds"] == []
    clock.advance(2)
    answer = orjson.loads(_answer(service))
    assert answer["leaseProjection"]["staleIssueIds"] == ["bd-1"]
    assert answer["leaseProjection"]["checkedAt"] == "2026-02-22T12:00:02+00:00"
