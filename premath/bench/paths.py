"""Every path of a benchmark run folder, as properties of one frozen object (no ad hoc joins).

specs/bench-run.md "Artifacts": `raw/` (events, harness output, tool output, harness input and
result), `atif/trajectory.json`, `summary.json`, `run-metadata.json`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from premath.runner.paths import safe_token
from premath.store.root import rebase
from premath.timefmt import session_stamp

DEFAULT_BENCH_RUNS_DIR = ".premath/bench/runs"


def new_run_dir(now: datetime, runs_dir: str | None = None) -> Path:
    """A fresh folder name: the time plus random bits, so a retry never meets the old run;
    by default in the project's `.premath/bench/runs` (premath.store.root)."""
    folder = rebase(DEFAULT_BENCH_RUNS_DIR) if runs_dir is None else runs_dir
    return Path(folder) / f"bench-{session_stamp(now)}-{os.urandom(4).hex()}"


@dataclass(frozen=True, slots=True)
class BenchRunPaths:
    root: Path

    @property
    def run_id(self) -> str:
        return self.root.name

    @property
    def raw(self) -> Path:
        return self.root / "raw"

    @property
    def events(self) -> Path:
        """Our event stream (append-only JSONL): lifecycle, harness rows, tool calls."""
        return self.raw / "events.jsonl"

    @property
    def task_input(self) -> Path:
        """The document the harness reads (its first positional argument)."""
        return self.raw / "in" / "task.json"

    @property
    def result(self) -> Path:
        """Where the harness writes its result (its second positional argument)."""
        return self.raw / "out" / "result.json"

    @property
    def harness_rows(self) -> Path:
        """Trajectory rows a harness may leave beside its result instead of `bench record`."""
        return self.raw / "out" / "trajectory.jsonl"

    @property
    def policy(self) -> Path:
        """The deny rules in force, copied so tool calls during the run apply the same ones."""
        return self.raw / "policy.json"

    @property
    def harness_stdout(self) -> Path:
        return self.raw / "harness.stdout"

    @property
    def harness_stderr(self) -> Path:
        return self.raw / "harness.stderr"

    @property
    def tools_dir(self) -> Path:
        return self.raw / "tools"

    def tool_output(self, call_id: str, stream: str) -> Path:
        return self.tools_dir / f"{safe_token(call_id, 'call')}.{stream}"

    @property
    def trajectory(self) -> Path:
        return self.root / "atif" / "trajectory.json"

    @property
    def summary(self) -> Path:
        return self.root / "summary.json"

    @property
    def metadata(self) -> Path:
        return self.root / "run-metadata.json"
