"""What the live dashboard shows, kept current from the files (specs/observation.md "Dashboard").

`Dashboard.refresh` is called on a timer: it stats the files it watches and re-reads only those
whose identity changed; with `--live` it first rebuilds the surface when a build input changed
(writing it and its events as `observe-build` does). It answers the sections that changed since
the last call, ready to be pushed to every page; `snapshot` is the whole state for a new page.
Sections: `surface` (the latest view, or the loader's error), `issues` (the board, sent as
upserts and removals), `bottleneck`, `trajectory` (latest steps and latest failures), `kpi`,
`issueSteps` (each issue's latest step among those, with its retry state), `runs`, `live`
(the last rebuild's outcome) and `workers` (the fleet's registry beside the
issues file, premath/record/worker_board.py: statuses judged at every refresh, so a worker
that falls silent is shown within one poll).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from premath.errors import PremathError
from premath.observe.attention import (
    LiveInputs,
    TrajectoryFacts,
    live_attention,
    next_lease_expiry,
    same_attention,
    trajectory_facts,
)
from premath.observe.board import issue_board
from premath.observe.builder import BuildPaths, build_surface, write_outputs
from premath.observe.changes import InputWatch
from premath.observe.inputs import InputReader
from premath.observe.issue_steps import issue_step_index
from premath.observe.runs import RunsCatalogue
from premath.observe.surface import SurfaceCache, SurfaceUnavailable
from premath.observe.views import latest_view
from premath.store.issues_file import FileIdentity, file_identity
from premath.timefmt import epoch_nanos

TYPE_CHECKING = False
if TYPE_CHECKING:
    from premath.clock import Clock

Document = dict[str, Any]
TRAJECTORY_TAIL = 50


@dataclass(frozen=True)
class DashboardSources:
    """Where the dashboard looks. Without `live`, only the surface is watched."""

    surface_path: str
    live: BuildPaths | None = None
    """Rebuild the surface (into `surface_path` and `live.out_jsonl`) when these inputs change."""
    trajectory_path: str | None = None
    runs_dir: str | None = None


def _now_pair(now: datetime) -> tuple[int, int]:
    nanos = epoch_nanos(now)
    return nanos // 1_000_000_000, nanos % 1_000_000_000


def _trajectory_sections(path: str, now: datetime) -> tuple[Document, Document]:
    from premath.record.kpi import kpi_report
    from premath.record.trajectory import query_trajectory

    try:
        latest = query_trajectory(path, "latest", TRAJECTORY_TAIL)
        failed = query_trajectory(path, "failed", TRAJECTORY_TAIL)
        tail = {
            "totalCount": latest["totalCount"],
            "failedCount": latest["failedCount"],
            "retryNeededCount": latest["retryNeededCount"],
            "latest": latest["items"],
            "failed": failed["items"],
        }
    except PremathError as exc:
        tail = {"error": exc.message}
    try:
        kpi = kpi_report(trajectory_path=path, now=now)
    except PremathError as exc:
        kpi = {"error": exc.message}
    return tail, kpi


@dataclass
class Dashboard:
    sources: DashboardSources
    clock: Clock
    version: int = 0
    _reader: InputReader = field(default_factory=lambda: InputReader(cache=True))
    _surface_cache: SurfaceCache | None = None
    _watch: InputWatch | None = None
    _identities: dict[str, FileIdentity | None] = field(default_factory=dict)
    _state: Document = field(default_factory=dict)
    _issues: dict[str, Document] = field(default_factory=dict)
    _runs: RunsCatalogue | None = None
    _registry: dict[str, Document] = field(default_factory=dict)
    _worker_stats: dict[str, Document] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _trajectory_facts: TrajectoryFacts | None = None
    _attention: Document | None = None
    """The live attention of the surface last written (D30a-2)."""
    _attention_registry: dict[str, Document] = field(default_factory=dict)
    _attention_key: tuple[FileIdentity | None, TrajectoryFacts | None, tuple[str, ...]] | None = (
        None
    )
    _attention_until: tuple[int, int] | None = None
    """The next lease expiry after the last check: the clock alone changes nothing before."""

    def __post_init__(self) -> None:
        self._surface_cache = SurfaceCache(self.sources.surface_path)
        if self.sources.live is not None:
            self._watch = InputWatch(self.sources.live)
        if self.sources.runs_dir is not None:
            self._runs = RunsCatalogue(self.sources.runs_dir)
        self._state = {"live": None if self.sources.live is None else {"ok": True}}

    def _moved(self, key: str, path: str) -> bool:
        identity = file_identity(path)
        if key in self._identities and self._identities[key] == identity:
            return False
        self._identities[key] = identity
        return True

    def _rebuild(self, changed: Document) -> None:
        live = self.sources.live
        assert live is not None
        assert self._watch is not None
        now = self.clock.now()
        inputs = LiveInputs(now, self._trajectory_facts, self._silent_workers(now))
        # The clock and the trajectory change what needs a person too, not only the inputs.
        stale = self._watch.changed()
        if not stale and not self._attention_moved(inputs):
            return
        paths = BuildPaths(
            live.repo_root,
            live.ciwitness_dir,
            live.issues_path,
            self.sources.surface_path,
            live.out_jsonl,
        )
        try:
            surface = build_surface(paths, self._reader, inputs)
            write_outputs(paths, surface)
            self._attention = surface.summary.get("live")
            outcome: Document = {"ok": True}
        except PremathError as exc:
            outcome = {"ok": False, "error": exc.message}
        if outcome != self._state["live"]:
            self._state["live"] = changed["live"] = outcome

    def _silent_workers(self, now: datetime) -> tuple[str, ...]:
        """The fleet registry's silent workers now; the registry re-read only when it moved."""
        from premath.record.worker_board import silent_worker_ids
        from premath.record.worker_registry import read_registry, registry_path

        assert self.sources.live is not None
        path = registry_path(self.sources.live.issues_path)
        try:
            if self._moved("attention-registry", path):
                self._attention_registry = read_registry(path)
        except PremathError:
            self._identities.pop("attention-registry", None)  # the worker panel says why
        return silent_worker_ids(self._attention_registry, now)

    def _attention_moved(self, inputs: LiveInputs) -> bool:
        """Whether the live attention differs from the surface's. It can only change with the
        issues file, the trajectory's facts, or the clock passing a lease's expiry, so between
        those it is not computed again (the server's idle cost stays a stat per tick)."""
        assert self.sources.live is not None
        path = self.sources.live.issues_path
        key = (file_identity(path), self._trajectory_facts, inputs.silent_workers)
        now = _now_pair(inputs.now)
        until = self._attention_until
        if key == self._attention_key and (until is None or now < until):
            return False
        try:
            rows = self._reader.issue_rows(path)
        except PremathError:
            return False  # the build reports it when the file changes
        self._attention_key, self._attention_until = key, next_lease_expiry(rows, now)
        return not same_attention(live_attention(rows, inputs), self._attention)

    def _surface(self, changed: Document) -> None:
        assert self._surface_cache is not None
        if not self._moved("surface", self.sources.surface_path):
            return
        try:
            section: Document = latest_view(self._surface_cache.load())
        except SurfaceUnavailable as exc:
            section = {"error": exc.cause}
        self._state["surface"] = changed["surface"] = section

    def _board(self, changed: Document) -> None:
        live = self.sources.live
        if live is None or not self._moved("issues", live.issues_path):
            return
        try:
            rows = self._reader.issue_rows(live.issues_path)
        except PremathError as exc:
            self._state["issuesError"] = changed["issuesError"] = exc.message
            return
        board = issue_board(rows, _now_pair(self.clock.now()))
        upsert = [row for key, row in board.issues.items() if self._issues.get(key) != row]
        remove = sorted(set(self._issues) - set(board.issues))
        self._issues = board.issues
        if self._state.get("issuesError") is not None:
            self._state["issuesError"] = changed["issuesError"] = None
        if upsert or remove:
            changed["issues"] = {"upsert": upsert, "remove": remove}
        if board.bottleneck != self._state.get("bottleneck"):
            self._state["bottleneck"] = changed["bottleneck"] = board.bottleneck

    def _trajectory(self, changed: Document) -> None:
        path = self.sources.trajectory_path
        if path is None or not self._moved("trajectory", path):
            return
        tail, kpi = _trajectory_sections(path, self.clock.now())
        self._trajectory_facts = None if "error" in tail else trajectory_facts(tail["latest"], kpi)
        if tail != self._state.get("trajectory"):
            self._state["trajectory"] = changed["trajectory"] = tail
        steps = (
            {}
            if "error" in tail
            else issue_step_index([*tail["latest"], *tail["failed"]], self._repo_root())
        )
        if steps != self._state.get("issueSteps"):
            self._state["issueSteps"] = changed["issueSteps"] = steps
        if kpi != self._state.get("kpi"):
            self._state["kpi"] = changed["kpi"] = kpi

    def _repo_root(self) -> str:
        """Where step records resolve: the live build's root, else the working folder."""
        return os.getcwd() if self.sources.live is None else self.sources.live.repo_root

    def issue_why(self, issue_id: str) -> Document:
        """The issue detail's *why* (issue_steps.py); NotFound for an unknown issue."""
        from premath.errors import NotFound
        from premath.observe.issue_steps import issue_why

        live = self.sources.live
        if live is None or self.sources.trajectory_path is None:
            raise NotFound("no issue memory: start the server with --live")
        return issue_why(
            issue_id,
            live.issues_path,
            self.sources.trajectory_path,
            live.repo_root,
            self.clock.now(),
        )

    def _workers(self, changed: Document) -> None:
        """The worker panel: the registry re-read when it changed, steps when the trajectory
        did, each worker's status judged now. Times since the last beat are the page's to count
        (from `lastHeartbeatAt` and the server's clock), so an idle fleet sends nothing."""
        from premath.record.worker_board import status_counts, step_stats, worker_rows
        from premath.record.worker_registry import read_registry, registry_path

        live = self.sources.live
        if live is None:
            return
        path = registry_path(live.issues_path)
        try:
            if self._moved("workers", path):
                self._registry = read_registry(path)
            trajectory = self.sources.trajectory_path
            if trajectory is not None and self._moved("workers-trajectory", trajectory):
                self._worker_stats = step_stats(trajectory)[0]
            rows = worker_rows(self._registry, self._worker_stats, epoch_nanos(self.clock.now()))
            for row in rows:
                del row["secondsSinceHeartbeat"]
            section: Document = {"workers": rows, "counts": status_counts(rows)}
        except PremathError as exc:
            self._identities.pop("workers", None)  # read it again next time
            section = {"error": exc.message}
        if section != self._state.get("workers"):
            self._state["workers"] = changed["workers"] = section

    def _run_list(self, changed: Document) -> None:
        if self._runs is None:
            return
        runs = self._runs.runs()
        if runs != self._state.get("runs"):
            self._state["runs"] = changed["runs"] = runs

    def refresh(self) -> Document | None:
        """The sections that changed since the last call, stamped; None when nothing did."""
        with self._lock:
            changed: Document = {}
            self._trajectory(changed)  # first: the live build reads its facts
            if self.sources.live is not None:
                self._rebuild(changed)
            self._surface(changed)
            self._board(changed)
            self._workers(changed)
            self._run_list(changed)
            if not changed:
                return None
            self.version += 1
            return {"version": self.version, "serverTimeMs": self._now_ms(), **changed}

    def snapshot(self) -> Document:
        """Everything a page needs to start: every section as of the last refresh."""
        with self._lock:
            return {
                "version": self.version,
                "serverTimeMs": self._now_ms(),
                "sources": self._describe_sources(),
                **self._state,
                "issues": list(self._issues.values()),
            }

    def _now_ms(self) -> int:
        return epoch_nanos(self.clock.now()) // 1_000_000

    def _describe_sources(self) -> Document:
        live = self.sources.live
        return {
            "surface": self.sources.surface_path,
            "live": live is not None,
            "issues": None if live is None else live.issues_path,
            "ciwitness": None if live is None else live.ciwitness_dir,
            "trajectory": self.sources.trajectory_path,
            "runs": self.sources.runs_dir,
            "cwd": os.getcwd(),
        }
