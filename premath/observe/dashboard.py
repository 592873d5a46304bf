"""What the live dashboard shows, kept current from the files (specs/observation.md "Dashboard").

`Dashboard.refresh` is called on a timer: it stats the files it watches and re-reads only those
whose identity changed; with `--live` it first rebuilds the surface when a build input changed
(writing it and its events as `observe-build` does). It answers the sections that changed since
the last call, ready to be pushed to every page; `snapshot` is the whole state for a new page.
Sections: `surface` (the latest view, or the loader's error), `issues` (the board, sent as
upserts and removals), `bottleneck`, `trajectory` (latest steps and latest failures), `kpi`,
`runs`, `live` (the last rebuild's outcome) and `workers` (the fleet's registry beside the
issues file, premath/harness/worker_board.py: statuses judged at every refresh, so a worker
that falls silent is shown within one poll).
"""

import os
import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from premath.clock import Clock
from premath.errors import PremathError
from premath.observe.board import issue_board
from premath.observe.builder import BuildPaths, build_surface, write_outputs
from premath.observe.changes import InputWatch
from premath.observe.inputs import InputReader
from premath.observe.runs import RunsCatalogue
from premath.observe.surface import SurfaceCache, SurfaceUnavailable
from premath.observe.views import latest_view
from premath.store.issues_file import FileIdentity, file_identity
from premath.timefmt import epoch_nanos

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


def _trajectory_sections(path: str) -> tuple[Document, Document]:
    from premath.harness.kpi import kpi_report
    from premath.harness.trajectory import query_trajectory

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
        kpi = kpi_report(trajectory_path=path)
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
        if not self._watch.changed():
            return
        paths = BuildPaths(
            live.repo_root,
            live.ciwitness_dir,
            live.issues_path,
            self.sources.surface_path,
            live.out_jsonl,
        )
        try:
            surface = build_surface(paths, self._reader)
            write_outputs(paths, surface)
            outcome: Document = {"ok": True}
        except PremathError as exc:
            outcome = {"ok": False, "error": exc.message}
        if outcome != self._state["live"]:
            self._state["live"] = changed["live"] = outcome

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
        tail, kpi = _trajectory_sections(path)
        if tail != self._state.get("trajectory"):
            self._state["trajectory"] = changed["trajectory"] = tail
        if kpi != self._state.get("kpi"):
            self._state["kpi"] = changed["kpi"] = kpi

    def _workers(self, changed: Document) -> None:
        """The worker panel: the registry re-read when it changed, steps when the trajectory
        did, each worker's status judged now. Times since the last beat are the page's to count
        (from `lastHeartbeatAt` and the server's clock), so an idle fleet sends nothing."""
        from premath.harness.worker_board import status_counts, step_stats, worker_rows
        from premath.harness.worker_registry import read_registry, registry_path

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
            if self.sources.live is not None:
                self._rebuild(changed)
            self._surface(changed)
            self._board(changed)
            self._trajectory(changed)
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
