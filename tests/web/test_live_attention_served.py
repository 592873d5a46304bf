"""The authority's surface tells the truth as it happens (issue 30, D30a-2): `mcp-serve
--transport streamable-http --observe --live` as a real process turns `needsAttention` on when a
lease expires (no file changes: the clock alone), and when failing steps land in the
trajectory, and says so on `/needs-attention`, to `observe` and to every page."""

from datetime import UTC, datetime, timedelta

import httpx2
import orjson
import pytest

from tests.mcp.client import http_server, new_token, token_file
from tests.observe.test_live_attention import ESCALATION, _row
from tests.support.observation import issue, lease, write_issues, write_witnesses
from tests.support.remote import wait_for
from tests.support.serve import EventStream

pytestmark = pytest.mark.timeout(180)


def _needs_attention(server, token: str) -> dict:
    answer = httpx2.get(
        server.base + "/needs-attention",
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_the_live_authority_sees_a_lease_expire_and_failures_land(tmp_path):
    root = tmp_path / "project"
    write_witnesses(root)
    expires = datetime.now(UTC) + timedelta(seconds=4)  # the real server's clock
    write_issues(
        root,
        [
            issue("bd-1", "work", "in_progress", assignee="w9",
                  lease=lease("bd-1", "w9", expires.strftime("%Y-%m-%dT%H:%M:%SZ"))),
            issue("bd-2", "more work"),
        ],
    )  # fmt: skip
    token = new_token()
    path = token_file(tmp_path, w1=token)
    with http_server(
        root, "--token-file", str(path), "--observe", "--live", "--mutation-policy", "open"
    ) as server:
        why = httpx2.get(
            server.base + "/issues/bd-9/why",
            headers={"Authorization": f"Bearer {token}"},
            timeout=10,
        )
        assert (why.status_code, why.json()) == (404, {"error": "issue not found: bd-9"})
        assert httpx2.get(server.base + "/issues/bd-2/why", timeout=10).status_code == 401
        first = _needs_attention(server, token)
        assert first["needsAttention"] is False
        assert first["live"]["attentionReasons"] == []
        stale = wait_for(
            lambda: (view := _needs_attention(server, token))["needsAttention"] and view,
            60,
            "the expired lease to turn needsAttention on",
        )
        assert stale["live"]["attentionReasons"] == ["stale_leases_now"]
        assert stale["live"]["staleLeaseIssueIds"] == ["bd-1"]
        assert stale["topFailureClass"] == "stale_leases_now"

        port = int(server.base.rpartition(":")[2])
        stream = EventStream(port, headers={"Authorization": f"Bearer {token}"})
        assert stream.next_event()[0] == "snapshot"
        trajectory = root / ".premath" / "harness_trajectory.jsonl"
        classes = ["gate_timeout", "failed_verification", "gate_timeout", "completed"]
        trajectory.write_bytes(
            b"".join(orjson.dumps(_row(n, c)) + b"\n" for n, c in enumerate(classes, start=1))
        )
        write_issues(
            root,
            [
                issue("bd-1", "work", "in_progress", assignee="w9",
                      lease=lease("bd-1", "w9", expires.strftime("%Y-%m-%dT%H:%M:%SZ"))),
                issue("bd-2", ESCALATION),
            ],
        )  # fmt: skip

        def pushed() -> dict | None:
            delta = stream.delta_with("surface", 30)
            live = delta["surface"]["summary"].get("live") or {}
            return delta if "escalations_open" in live.get("attentionReasons", []) else None

        delta = wait_for(pushed, 60, "a surface delta with the escalation")
        summary = delta["surface"]["summary"]
        assert summary["live"]["attentionReasons"] == [
            "stale_leases_now",
            "escalations_open",
            "recent_failure_share_high",
            "kpi_rollback",
        ]
        assert summary["topFailureClass"] == "gate_timeout"
        assert summary["needsAttention"] is True
        stream.close()
