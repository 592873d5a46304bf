"""`harness-loop coordinator --executor ray`: the loop's workers placed on a Ray cluster, every
claim going through one MCP authority (specs/remote-workers.md "Placement on Ray").

Ray places and supervises the workers; nothing here schedules. Each worker is one Ray task
(`num_cpus`, `memory` from `--worker-cpus` / `--worker-memory-mb`, spread over the nodes) that
runs the ordinary worker loop (`run_worker`, draining) in its own process on its node: it connects
to the MCP server, clones the repository into its home there, and for each issue it claims
works in its clone, verifies, pushes `premath/<issue id>` and closes the issue through MCP. A
task whose node is lost is started again by Ray elsewhere (`max_retries`); the issue the lost
worker held comes back to the fleet when its lease goes stale (draining workers wait for it).

The coordinator prints what its workers report, as it happens, through a Ray queue on its own
node: `worker -> issue on node` for every claim. Ctrl-C or SIGTERM cancels every task (Ray
interrupts each worker, which ends its command's process group and gives its lease back through
MCP), insists by force after `cancel_grace_s`, then gives back any lease its workers were
granted and still hold. This module imports ray: only `--executor ray` loads it.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import socket
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from premath.clock import SystemClock
from premath.errors import PremathError
from premath.harness.authority import IssueAuthority
from premath.harness.loop_config import WorkerSettings, worker_config
from premath.harness.loop_paths import LoopPaths
from premath.harness.stop_reason import WorkerEnd, failure_stop
from premath.runner.interrupts import on_stop_signals
from premath.runner.ray_cluster import RayConnection, ray

FLEET_REPORT_KIND = "premath.harness.coordinator_loop.v1"
Report = Callable[[str], None]
WorkerOpener = Callable[[str, str, Report], AbstractContextManager[tuple[IssueAuthority, Any, Any]]]
"""Connects one worker (by id, on its node) to its authority and prepares its clone:
(authority, GitDelivery, its Presence there). Pickled to the nodes, so a plain top-level class
instance."""
_CLAIMED = re.compile(r"^\[worker:[^\]]+\] claimed (?P<issue>\S+) \(lease (?P<lease>[^)\s]+)\)$")
_WAIT_S = 0.2


@dataclass(frozen=True)
class FleetConfig:
    settings: WorkerSettings
    """The loop's shared settings (work, verify, TTL, policy...); each node lays out its own
    paths under the worker's home."""
    open_worker: WorkerOpener
    concurrency: int
    worker_prefix: str
    worker_cpus: float = 1.0
    worker_memory_mb: int | None = None
    max_steps_per_worker: int = 1_000_000
    continue_on_failure: bool = False
    drain_poll_s: float = 5.0
    ray_address: str | None = None
    pass_env: dict[str, str] = field(default_factory=dict)
    """Values of `--pass-env` variables, taken from the coordinator's environment."""
    lock_timeout_s: float = 10.0
    max_task_retries: int = 3
    """How many times Ray starts a worker again after its node was lost."""
    cancel_grace_s: float = 30.0

    def worker_ids(self) -> list[str]:
        return [f"{self.worker_prefix}.{k}" for k in range(1, self.concurrency + 1)]


@dataclass(slots=True)
class FleetReport:
    workers: list[dict[str, Any]] = field(default_factory=list)
    exit_code: int = 0
    stopped_reason: str = ""
    released_lease_issue_ids: list[str] = field(default_factory=list)
    claims: list[dict[str, str]] = field(default_factory=list)
    """Every claim the workers reported: worker, issue, node, lease."""

    def to_document(self) -> dict[str, Any]:
        documents = [worker.get("document") or {} for worker in self.workers]
        return {
            "action": "harness-loop.coordinator",
            "reportKind": FLEET_REPORT_KIND,
            "executor": "ray",
            "workerCount": len(self.workers),
            "closedCount": sum(len(d.get("closedIssueIds", [])) for d in documents),
            "failedCount": sum(len(d.get("failedIssueIds", [])) for d in documents),
            "stoppedReason": self.stopped_reason,
            "exitCode": self.exit_code,
            "releasedLeaseIssueIds": self.released_lease_issue_ids,
            "claims": self.claims,
            "workers": [
                {
                    "workerId": worker["workerId"],
                    "node": worker.get("node"),
                    "exitCode": worker["exitCode"],
                    "closedIssueIds": (worker.get("document") or {}).get("closedIssueIds", []),
                    "failedIssueIds": (worker.get("document") or {}).get("failedIssueIds", []),
                    "stoppedReason": (worker.get("document") or {}).get("stoppedReason"),
                    "error": worker.get("error"),
                }
                for worker in self.workers
            ],
        }


def node_name() -> str:
    """`<host name>/<first 8 of the Ray node id>`: two nodes on one host stay apart."""
    node_id: str = ray.get_runtime_context().get_node_id()
    return f"{socket.gethostname()}/{node_id[:8]}"


def fleet_worker(
    worker_id: str,
    settings: WorkerSettings,
    open_worker: WorkerOpener,
    max_steps: int,
    continue_on_failure: bool,
    drain_poll_s: float,
    lock_timeout_s: float,
    events: Any,
) -> dict[str, Any]:
    """The Ray task's body: one draining worker on this node; its report, or its error."""
    from premath.harness.worker import run_worker

    node = node_name()

    def report(line: str) -> None:
        with contextlib.suppress(Exception):  # the coordinator's queue is best effort
            events.put_nowait((worker_id, node, line))

    report(f"[worker:{worker_id}] started")
    outcome: dict[str, Any] = {"workerId": worker_id, "node": node, "exitCode": 1}
    home = None
    try:
        with open_worker(worker_id, node, report) as (memory, delivery, presence):
            home = delivery.home
            cfg = worker_config(
                settings,
                worker_id=worker_id,
                worktree=delivery.worktree,
                lock_timeout_s=lock_timeout_s,
                memory=memory,
                delivery=delivery,
                paths=LoopPaths.resolve(delivery.home),
                presence=presence,
            )
            done = run_worker(
                cfg,
                max_steps=max_steps,
                continue_on_failure=continue_on_failure,
                clock=SystemClock(),
                report=report,
                drain_poll_s=drain_poll_s,
            )
        outcome.update(exitCode=done.exit_code, document=done.to_document())
    except PremathError as error:
        report(f"[worker:{worker_id}] error: {error.message}")
        outcome["error"] = {"code": error.code, "message": error.message}
    finally:
        if home is not None:  # the clones go; the worker's records stay in its home
            shutil.rmtree(f"{home}/repo", ignore_errors=True)
            shutil.rmtree(f"{home}/integration", ignore_errors=True)
    return outcome


class _Printer:
    """The workers' lines as the coordinator prints them, claims as `worker -> issue`."""

    def __init__(self, report: Report, result: FleetReport) -> None:
        self.report, self.result = report, result
        self.nodes: dict[str, str] = {}

    def line(self, worker_id: str, node: str, line: str) -> None:
        if self.nodes.get(worker_id) != node:
            self.nodes[worker_id] = node
            self.report(f"[coordinator] {worker_id} runs on node {node}")
        claimed = _CLAIMED.match(line)
        if claimed is not None:
            issue, lease = claimed.group("issue"), claimed.group("lease")
            self.result.claims.append(
                {"workerId": worker_id, "issueId": issue, "node": node, "leaseId": lease}
            )
            self.report(f"[coordinator] {worker_id} -> {issue} on node {node}")
            return
        self.report(line if line.startswith("[") else f"[{worker_id}] {line}")


def _drain(events: Any, printer: _Printer) -> None:
    with contextlib.suppress(Exception):  # a queue lost with its node prints nothing more
        while not events.empty():
            for worker_id, node, line in events.get_nowait_batch(events.qsize()):
                printer.line(worker_id, node, line)


def _events_queue() -> Any:
    """A Ray queue on the coordinator's own node (it must outlive any worker's node)."""
    from ray.util.queue import Queue
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = ray.get_runtime_context().get_node_id()
    strategy = NodeAffinitySchedulingStrategy(node_id=here, soft=False)
    return Queue(actor_options={"num_cpus": 0, "scheduling_strategy": strategy})


def run_fleet(
    cfg: FleetConfig,
    authority: IssueAuthority,
    *,
    now: Callable[[], datetime],
    report: Report = lambda _line: None,
) -> FleetReport:
    """Preflight through the authority, then the workers on Ray until they drain, one fails
    (without `continue_on_failure`), or an interrupt."""
    result = FleetReport()
    cycle = authority.active_cycle(now())
    if cycle is not None:
        report(f"[coordinator] dependency cycle in the active scope: {' -> '.join(cycle)}")
        result.exit_code, result.stopped_reason = 1, "dependency_cycle"
        return result
    ready = authority.ready_ids(now())
    held = [lease for lease in authority.held_leases(now()) if lease.state == "active"]
    report(
        f"[coordinator] {authority.location()}: ready={len(ready)} held={len(held)}; "
        f"{cfg.concurrency} worker(s) on Ray"
    )
    if not ready and not held:
        result.stopped_reason = "no_ready_issue"
        return result
    cluster = RayConnection(cfg.ray_address)
    cluster.connect()
    try:
        _place(cfg, result, report)
    finally:
        cluster.close()
    if result.stopped_reason == "interrupted":
        result.released_lease_issue_ids = _give_back(authority, result, now())
        report(
            "[coordinator] interrupted: workers stopped, leases given back "
            f"({', '.join(result.released_lease_issue_ids) or 'none left held'})"
        )
    return result


def _place(cfg: FleetConfig, result: FleetReport, report: Report) -> None:
    events = _events_queue()
    printer = _Printer(report, result)
    options: dict[str, Any] = {
        "num_cpus": cfg.worker_cpus,
        "max_retries": cfg.max_task_retries,
        "retry_exceptions": False,
        "scheduling_strategy": "SPREAD",
    }
    if cfg.worker_memory_mb is not None:
        options["memory"] = cfg.worker_memory_mb * 1024 * 1024
    if cfg.pass_env:
        options["runtime_env"] = {"env_vars": dict(cfg.pass_env)}
    remote = ray.remote(fleet_worker).options(**options)
    refs = {
        remote.remote(
            worker_id,
            cfg.settings,
            cfg.open_worker,
            cfg.max_steps_per_worker,
            cfg.continue_on_failure,
            cfg.drain_poll_s,
            cfg.lock_timeout_s,
            events,
        ): worker_id
        for worker_id in cfg.worker_ids()
    }
    stop = threading.Event()
    with on_stop_signals(stop.set):
        outcomes = _wait(cfg, refs, events, printer, stop)
    _drain(events, printer)
    result.workers = [outcomes[worker_id] for worker_id in cfg.worker_ids()]
    with contextlib.suppress(Exception):
        ray.kill(events.actor)
    stop_on = failure_stop(
        [
            WorkerEnd(w["workerId"], w["exitCode"], w.get("document"), w.get("error"))
            for w in result.workers
        ]
    )
    if stop.is_set():
        result.exit_code, result.stopped_reason = 1, "interrupted"
    elif stop_on is not None:
        result.exit_code, result.stopped_reason = stop_on.exit_code, stop_on.reason
        report(f"[coordinator] stopped: {stop_on.summary}")
    else:
        result.stopped_reason = "drained"


def _wait(
    cfg: FleetConfig,
    refs: dict[Any, str],
    events: Any,
    printer: _Printer,
    stop: threading.Event,
) -> dict[str, dict[str, Any]]:
    outcomes: dict[str, dict[str, Any]] = {}
    pending = list(refs)
    cancelled_at: float | None = None
    forced = False
    while pending:
        done, pending = ray.wait(pending, num_returns=len(pending), timeout=_WAIT_S)
        for ref in done:
            outcomes[refs[ref]] = _outcome(refs[ref], ref)
        _drain(events, printer)
        if stop.is_set() and cancelled_at is None:
            printer.report(f"[coordinator] stopping {len(pending)} worker(s) on the cluster")
            for ref in pending:
                ray.cancel(ref, force=False)
            cancelled_at = time.monotonic()
        late = cancelled_at is not None and time.monotonic() - cancelled_at > cfg.cancel_grace_s
        if late and not forced and pending:
            for ref in pending:
                ray.cancel(ref, force=True)
            forced = True
    return outcomes


def _outcome(worker_id: str, ref: Any) -> dict[str, Any]:
    try:
        outcome: dict[str, Any] = ray.get(ref)
    except ray.exceptions.TaskCancelledError:
        return _failed(worker_id, "interrupted", "the worker was cancelled")
    except ray.exceptions.RayError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, PremathError):
            return _failed(worker_id, cause.code, cause.message)
        lines = [line for line in str(exc).strip().splitlines() if line.strip()]
        message = f"{type(exc).__name__}: {lines[0][:300] if lines else ''}"
        return _failed(worker_id, "internal_error", f"the worker's Ray task failed ({message})")
    return outcome


def _failed(worker_id: str, code: str, message: str) -> dict[str, Any]:
    return {"workerId": worker_id, "exitCode": 1, "error": {"code": code, "message": message}}


def _give_back(authority: IssueAuthority, result: FleetReport, now: datetime) -> list[str]:
    """Leases this fleet's workers were granted (each claim's lease id) and still hold."""
    ours = {(claim["workerId"], claim["leaseId"]) for claim in result.claims}
    released = []
    with contextlib.suppress(PremathError):
        for lease in authority.held_leases(now):
            if (lease.owner, lease.lease_id) in ours and authority.release_for(
                lease.issue_id, lease.owner, lease.lease_id, now=now
            ):
                released.append(lease.issue_id)
    return released
