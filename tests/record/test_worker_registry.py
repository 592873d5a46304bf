"""The fleet's worker registry (premath/record/worker_registry.py) and its view
(premath/record/worker_board.py): what is stored, what a flood stores, when a worker is silent
or gone, its steps in the KPI window."""

import os
import threading
from pathlib import Path

import orjson
import pytest

from premath.errors import InputInvalid
from premath.record.trajectory import append_step
from premath.record.worker_board import silent_worker_reasons, status_text, workers_document
from premath.record.worker_registry import (
    MAX_WORKERS,
    Beat,
    HeartbeatLimiter,
    Registration,
    WorkerNotRegistered,
    WorkerRegistry,
    registry_path,
)


def registration(worker_id: str = "fleet.1", **fields) -> Registration:
    values = {
        "host": "h1",
        "node": "h1/abcd1234",
        "pid": 42,
        "premath_version": "0.1.0",
        "started_at": "2026-03-01T09:59:00Z",
        "heartbeat_s": 5.0,
        **fields,
    }
    return Registration(worker_id, **values)


@pytest.fixture
def registry(tmp_path):
    return WorkerRegistry(registry_path(str(tmp_path / ".premath" / "issues.jsonl")), 2.0)


def stored(registry) -> dict:
    return orjson.loads(Path(registry.path).read_bytes())


def test_the_registry_lives_beside_the_issues_file_and_keeps_each_worker(registry, clock):
    assert registry.path.endswith("/.premath/harness_workers.json")
    registry.register(registration(), clock.now())
    clock.advance(2)
    saved, entry = registry.heartbeat(Beat("fleet.1", "working", "bd-3", 2, 3), clock.now())
    assert saved is True
    document = stored(registry)
    assert document["registryKind"] == "premath.harness.workers.v1"
    worker = document["workers"]["fleet.1"]
    assert worker == entry
    assert (worker["node"], worker["pid"], worker["premathVersion"]) == ("h1/abcd1234", 42, "0.1.0")
    assert (worker["phase"], worker["issueId"], worker["attempt"], worker["maxAttempts"]) == (
        "working",
        "bd-3",
        2,
        3,
    )
    assert worker["lastHeartbeatAt"] == "2026-03-01T10:00:02Z"
    assert worker["state"] == "running"
    assert not os.path.exists(registry.path + ".lock")


def test_deregistered_workers_are_gone_with_their_reason_and_cannot_heartbeat(registry, clock):
    registry.register(registration(), clock.now())
    registry.deregister("fleet.1", "drained", clock.now())
    view = workers_document(registry.path, None, clock.now())
    assert [(w["workerId"], w["status"], w["goneReason"]) for w in view["workers"]] == [
        ("fleet.1", "gone", "drained")
    ]
    with pytest.raises(WorkerNotRegistered, match=r"worker.not_registered.*has deregistered"):
        registry.heartbeat(Beat("fleet.1", "idle"), clock.now())
    with pytest.raises(WorkerNotRegistered, match="is not registered"):
        registry.heartbeat(Beat("nobody", "idle"), clock.now())
    assert list(stored(registry)["workers"]) == ["fleet.1"]  # a stranger's beat stores nothing


def test_a_worker_whose_heartbeats_stop_for_three_intervals_is_silent(registry, clock):
    registry.register(registration(heartbeat_s=5.0), clock.now())
    registry.heartbeat(Beat("fleet.1", "verifying", "bd-9", 1), clock.now())
    clock.advance(15)
    assert workers_document(registry.path, None, clock.now())["workers"][0]["status"] == "running"
    clock.advance(1)
    view = workers_document(registry.path, None, clock.now())
    assert view["workers"][0]["status"] == "silent"
    assert view["counts"] == {"running": 0, "silent": 1, "gone": 0}
    assert view["attentionReasons"] == [
        "worker fleet.1 is silent (no heartbeat for 16 s; last verifying on bd-9)"
    ]
    issues = registry.path.replace("harness_workers.json", "issues.jsonl")
    assert silent_worker_reasons(issues, clock.now()) == view["attentionReasons"]


def test_registering_again_after_a_restart_counts_and_keeps_the_last_phase(registry, clock):
    registry.register(registration(), clock.now())
    registry.heartbeat(Beat("fleet.1", "working", "bd-1", 1), clock.now())
    again = registry.register(registration(), clock.now())
    assert (again["registrations"], again["phase"], again["issueId"]) == (2, "working", "bd-1")
    fresh = registry.register(registration(pid=43), clock.now())  # a new process: a new run
    assert (fresh["registrations"], fresh["phase"], fresh["issueId"]) == (1, "idle", None)


def test_a_heartbeat_flood_is_not_stored_each(tmp_path, clock):
    limiter = HeartbeatLimiter(burst=4, refill_s=3600)
    registry = WorkerRegistry(str(tmp_path / "workers.json"), 2.0, limiter)
    registry.register(registration(), clock.now())
    answers = [registry.heartbeat(Beat("fleet.1", "working"), clock.now())[0] for _ in range(200)]
    assert answers.count(True) == 4  # the burst
    assert stored(registry)["workers"]["fleet.1"]["heartbeatCount"] == 4
    limiter.burst, limiter.refill_s = 4, 1e-9  # the bucket refills: the next beat is stored
    assert registry.heartbeat(Beat("fleet.1", "idle"), clock.now())[0] is True
    assert stored(registry)["workers"]["fleet.1"]["heartbeatsDropped"] == 196
    for _ in range(3):  # registrations have a bucket of their own
        registry.register(registration(), clock.now())
    with pytest.raises(InputInvalid, match=r"worker.rate_limited\] worker fleet.1 registers too"):
        registry.register(registration(), clock.now())


def test_made_up_ids_cost_no_memory_that_stays(monkeypatch):
    monkeypatch.setattr("premath.record.worker_registry.MAX_BUCKETS", 8)
    limiter = HeartbeatLimiter(burst=2, refill_s=1e-9)
    for n in range(100):
        assert limiter.admit(f"made.up.{n}")
    assert len(limiter._buckets) <= 9


def test_bad_reports_are_refused_with_what_to_fix(registry, clock):
    with pytest.raises(InputInvalid, match="workerId must not be empty"):
        registry.register(registration(" "), clock.now())
    with pytest.raises(InputInvalid, match="host is longer than 256"):
        registry.register(registration(host="h" * 300), clock.now())
    with pytest.raises(InputInvalid, match="heartbeatSeconds must be in"):
        registry.register(registration(heartbeat_s=0.0), clock.now())
    registry.register(registration(), clock.now())
    with pytest.raises(InputInvalid, match="phase must be one of claiming, working"):
        registry.heartbeat(Beat("fleet.1", "dancing"), clock.now())  # type: ignore[arg-type]


def test_a_full_registry_drops_the_longest_gone_worker_and_refuses_when_all_run(tmp_path, clock):
    workers = {f"w{k}": {"workerId": f"w{k}", "state": "running"} for k in range(MAX_WORKERS - 2)}
    workers["old"] = {"workerId": "old", "state": "gone", "goneAt": "2026-01-01T00:00:00Z"}
    workers["new"] = {"workerId": "new", "state": "gone", "goneAt": "2026-02-01T00:00:00Z"}
    path = tmp_path / "workers.json"
    path.write_bytes(orjson.dumps({"schema": 1, "workers": workers}))
    registry = WorkerRegistry(str(path), 2.0)
    registry.register(registration("x1"), clock.now())
    kept = stored(registry)["workers"]
    assert ("old" in kept, "new" in kept, "x1" in kept, len(kept)) == (False, True, True, 1024)
    registry.register(registration("x2"), clock.now())
    with pytest.raises(InputInvalid, match="holds 1024 running workers: x3 cannot register"):
        registry.register(registration("x3"), clock.now())


def test_concurrent_writers_lose_no_worker(tmp_path, clock):
    path = str(tmp_path / "workers.json")
    barrier = threading.Barrier(8)

    def register(k: int) -> None:
        registry = WorkerRegistry(path, 10.0)
        barrier.wait()
        for n in range(5):
            registry.register(registration(f"w{k}.{n}"), clock.now())

    threads = [threading.Thread(target=register, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(orjson.loads(Path(path).read_bytes())["workers"]) == 40


def test_steps_closes_and_pass_rate_come_from_the_kpi_window(registry, clock, tmp_path):
    trajectory = str(tmp_path / ".premath" / "harness_trajectory.jsonl")
    rows = [
        ("fleet.1", "bd-1", "completed", "2026-03-01T09:00:00Z"),
        ("fleet.1", "bd-2.1", "failed_verification", "2026-03-01T09:10:00Z"),
        ("fleet.2", "bd-3", "completed", "2026-03-01T09:20:00Z"),
        ("fleet.1", "bd-4", "completed", "2026-02-20T09:00:00Z"),  # before the window
    ]
    for index, (worker, issue, result, finished) in enumerate(rows, 1):
        append_step(
            trajectory,
            step_id=f"{worker}.{issue}.{index}",
            issue_id=issue,
            action="worker.loop",
            result_class=result,
            finished_at=finished,
            now=clock.now(),
            lock_timeout=2.0,
        )
    registry.register(registration("fleet.1"), clock.now())
    registry.register(registration("fleet.2"), clock.now())
    view = workers_document(registry.path, trajectory, clock.now())
    stats = {w["workerId"]: (w["steps"], w["closes"], w["passRate"]) for w in view["workers"]}
    assert stats == {"fleet.1": (2, 1, 0.5), "fleet.2": (1, 1, 1.0)}
    assert view["window"] == {
        "windowHours": 24,
        "windowStart": "2026-02-28T09:20:00Z",
        "windowEnd": "2026-03-01T09:20:00Z",
    }
    assert status_text(view).splitlines() == [
        "[harness-loop status] workers: running=2 silent=0 gone=0",
        "  WORKER   STATUS   NODE         PHASE  ISSUE  ATTEMPT  BEAT    STEPS  CLOSED  PASS",
        "  fleet.1  running  h1/abcd1234  idle   -      -        0s ago  2      1       50%",
        "  fleet.2  running  h1/abcd1234  idle   -      -        0s ago  1      1       100%",
        "attention: none",
    ]


def test_no_registry_is_no_workers_and_no_window(tmp_path, clock):
    view = workers_document(str(tmp_path / "none.json"), str(tmp_path / "none.jsonl"), clock.now())
    assert (view["workers"], view["window"], view["attentionReasons"]) == ([], None, [])
