"""Every path of a run, as properties of frozen objects: no ad hoc joins (specs/experiment.md).

Names that come from user data (experiment, variant and task ids) are tokenised before they
become folder names, and every trial folder is checked to stay inside the run folder, so a task
id such as `../../etc` cannot make us write elsewhere.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from premath.errors import InputInvalid
from premath.text import id_token

DEFAULT_RUNS_DIR = ".premath/runs"
_TOKEN_MAX = 32


def safe_token(value: str, empty: str) -> str:
    """A folder-safe token of `value`: the id token, shortened with a digest when too long."""
    token = id_token(value, empty)
    if len(token) <= _TOKEN_MAX:
        return token
    digest = hashlib.sha256(value.encode("utf-8")).hexdigest()[:8]
    return f"{token[: _TOKEN_MAX - 9]}-{digest}"


def inside(root: Path, candidate: Path) -> Path:
    """`candidate`, once proven to resolve inside `root`; else InputInvalid."""
    resolved_root = root.resolve()
    resolved = candidate.resolve()
    if resolved != resolved_root and resolved_root not in resolved.parents:
        raise InputInvalid(f"refusing a path outside the run folder: {candidate}")
    return candidate


@dataclass(frozen=True, slots=True)
class AttemptPaths:
    """One attempt of one trial: `trials/<trial_id>/attempt-<n>/`."""

    root: Path

    @property
    def in_dir(self) -> Path:
        return self.root / "in"

    @property
    def task_file(self) -> Path:
        return self.in_dir / "task.json"

    @property
    def out_dir(self) -> Path:
        return self.root / "out"

    @property
    def result_file(self) -> Path:
        return self.out_dir / "result.json"

    @property
    def stdout_file(self) -> Path:
        return self.root / "stdout.txt"

    @property
    def stderr_file(self) -> Path:
        return self.root / "stderr.txt"

    @property
    def group_ticket(self) -> Path:
        """Present only while the harness runs (or after the runner died): `<pid> <start>`."""
        return self.root / "harness.pid"


@dataclass(frozen=True, slots=True)
class RunPaths:
    """A run folder: `<runs dir>/<run id>/` and what it holds (specs/experiment.md)."""

    root: Path

    @property
    def run_id(self) -> str:
        return self.root.name

    @property
    def manifest(self) -> Path:
        return self.root / "run.json"

    @property
    def resolved_experiment(self) -> Path:
        return self.root / "experiment.resolved.json"

    @property
    def tasks(self) -> Path:
        return self.root / "tasks.jsonl"

    @property
    def schedule(self) -> Path:
        return self.root / "schedule.json"

    @property
    def trials_log(self) -> Path:
        return self.root / "trials.jsonl"

    @property
    def trajectory(self) -> Path:
        return self.root / "harness_trajectory.jsonl"

    @property
    def lock(self) -> Path:
        return self.root / "run.lock"

    @property
    def trials_dir(self) -> Path:
        return self.root / "trials"

    def trial_dir(self, trial_id: str) -> Path:
        return inside(self.root, self.trials_dir / trial_id)

    def attempt(self, trial_id: str, attempt: int) -> AttemptPaths:
        return AttemptPaths(inside(self.root, self.trial_dir(trial_id) / f"attempt-{attempt}"))

    def highest_attempt_on_disk(self, trial_id: str) -> int:
        """The largest N of an existing `attempt-N` folder (0 if none): never reuse a folder."""
        folder = self.trial_dir(trial_id)
        highest = 0
        if folder.is_dir():
            for entry in os.scandir(folder):
                name = entry.name
                if name.startswith("attempt-") and name[8:].isdigit():
                    highest = max(highest, int(name[8:]))
        return highest


def stale_tickets(paths: RunPaths) -> list[AttemptPaths]:
    """Attempts whose harness was running when a runner died (their ticket outlived it)."""
    return [
        AttemptPaths(ticket.parent) for ticket in paths.trials_dir.glob("*/attempt-*/harness.pid")
    ]


def trial_id_for(schedule_index: int, variant_id: str, task_id: str, replication: int) -> str:
    """`000012-hot-task_7-r0`: stable per schedule slot, readable, always one safe path part."""
    variant = safe_token(variant_id, "variant")
    task = safe_token(task_id, "task")
    return f"{schedule_index:06d}-{variant}-{task}-r{replication}"
