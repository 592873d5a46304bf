"""The `ray` executor: each trial attempt is one Ray task on some node of a cluster.

The task runs the attempt with the local executor on its node (the docker executor when the
experiment names an image) in a temporary attempt folder, then returns the attempt's files:
everything under `out/` (result.json included, up to `OUT_TRANSFER_CAP` bytes in all) and the
capped `stdout.txt`/`stderr.txt`. The driver writes them into the run folder's attempt folder
and judges them exactly as for a local attempt, so the run folder stays the one source of truth
and only the row's `executor` says where a trial ran (specs/experiment.md "Ray executor").

Ray never retries a task (`max_retries=0`): a node lost mid-trial surfaces as a Ray error,
which becomes an `executor_failed` row that the retry policy or `resume --rerun-errors` runs
again, and no attempt is ever recorded twice. Cancelling (Ctrl-C) cancels the task without
force first, so the node's `run_bounded` ends the harness's process group, then by force.

This module imports ray at the top: only `executor_choice.make_executor("ray")` imports it, so
importing premath never loads ray.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import tempfile
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from premath.errors import PremathError
from premath.models.trial import ExecutorName
from premath.runner.executors import (
    DEFAULT_OUTPUT_CAP,
    DockerExecutor,
    Invocation,
    LocalExecutor,
)
from premath.runner.paths import AttemptPaths
from premath.runner.process import DEFAULT_GRACE_S, ProcessOutcome, spawn_failed
from premath.runner.ray_cluster import RayConnection, ray
from premath.runner.trial import write_task_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

OUT_TRANSFER_CAP = 64 * 1024 * 1024
"""Bytes of `out/` a task sends back; files past it stay on the node (noted in stderr.txt)."""
_WAIT_S = 0.05

FileKind = Literal["file", "symlink"]


class RayTaskFailed(PremathError):
    """The Ray task did not bring an outcome back (node lost, worker killed, task error)."""


@dataclass(frozen=True, slots=True)
class ReturnedFile:
    """One entry of the attempt folder as the node saw it; symlinks travel as symlinks, so the
    driver's verdict (a symlinked result.json is refused) is the node's."""

    path: str
    """Relative to the attempt folder (`out/result.json`, `stdout.txt`)."""
    kind: FileKind
    data: bytes
    """The file's bytes, or a symlink's target."""


@dataclass(frozen=True, slots=True)
class RemoteAttempt:
    outcome: ProcessOutcome
    files: tuple[ReturnedFile, ...]
    left_on_node: tuple[str, ...]
    node: str


def _collect(paths: AttemptPaths, cap: int) -> tuple[list[ReturnedFile], list[str]]:
    files: list[ReturnedFile] = []
    left: list[str] = []
    budget = cap
    for stream in (paths.stdout_file, paths.stderr_file):
        if stream.is_file():
            files.append(ReturnedFile(stream.name, "file", stream.read_bytes()))
    for folder, dirnames, filenames in os.walk(paths.out_dir):
        dirnames.sort()
        for name in sorted(filenames) + [d for d in dirnames if Path(folder, d).is_symlink()]:
            full = Path(folder, name)
            relative = full.relative_to(paths.root).as_posix()
            info = full.lstat()
            if stat.S_ISLNK(info.st_mode):
                files.append(ReturnedFile(relative, "symlink", os.fsencode(os.readlink(full))))
            elif stat.S_ISREG(info.st_mode) and info.st_size <= budget:
                files.append(ReturnedFile(relative, "file", full.read_bytes()))
                budget -= info.st_size
            elif stat.S_ISREG(info.st_mode):
                left.append(relative)
    return files, left


def run_attempt_on_node(
    invocation: Invocation,
    task_payload: bytes,
    attempt_name: str,
    output_cap: int,
    grace_s: float,
) -> RemoteAttempt:
    """The Ray task's body: one attempt on this node, its files returned, nothing kept."""
    node = socket.gethostname()
    if invocation.image is None and not invocation.workdir.is_dir():
        raise RayTaskFailed(
            f"the experiment folder {invocation.workdir} does not exist on node {node}: put it "
            "at the same path on every node (a shared filesystem) or run the harness from an "
            "image (runtime.image)"
        )
    scratch = Path(tempfile.mkdtemp(prefix="premath-ray-"))
    try:
        paths = AttemptPaths(scratch / attempt_name)
        paths.root.mkdir()
        paths.in_dir.mkdir()
        write_task_file(paths.task_file, task_payload)
        paths.out_dir.mkdir()
        executor = (
            DockerExecutor(output_cap=output_cap, grace_s=grace_s)
            if invocation.image is not None
            else LocalExecutor(output_cap=output_cap, grace_s=grace_s)
        )
        outcome = executor.execute(invocation, paths)
        files, left = _collect(paths, OUT_TRANSFER_CAP)
        return RemoteAttempt(outcome, tuple(files), tuple(left), node)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _write_returned(paths: AttemptPaths, attempt: RemoteAttempt) -> None:
    """The node's files into the driver's attempt folder (created by the runner, `out/` empty)."""
    for item in attempt.files:
        target = paths.root / item.path
        if paths.root.resolve() not in target.resolve().parents:
            continue  # a name the node cannot have made; never write outside the attempt
        target.parent.mkdir(parents=True, exist_ok=True)
        if item.kind == "symlink":
            os.symlink(os.fsdecode(item.data), target)
        else:
            target.write_bytes(item.data)
    if attempt.left_on_node:
        with paths.stderr_file.open("ab") as stderr:
            stderr.write(
                f"\n[premath] {len(attempt.left_on_node)} file(s) of out/ were over the "
                f"{OUT_TRANSFER_CAP} byte transfer cap and stayed on node {attempt.node}: "
                f"{', '.join(attempt.left_on_node)}\n".encode()
            )


def _cancelled() -> ProcessOutcome:
    """The outcome `run_bounded` gives a cancelled child, for a task cancelled from here."""
    return replace(spawn_failed("cancelled"), status="cancelled", spawn_error=None)


def _failure_message(exc: BaseException) -> str:
    """What went wrong, without Ray's multi-line traceback."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, PremathError):
        return cause.message
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    summary = lines[0][:300] if lines else ""
    return f"the Ray task ended without an outcome ({type(exc).__name__}: {summary})"


class RayExecutor:
    name: ExecutorName = "ray"

    def __init__(
        self,
        address: str | None,
        output_cap: int = DEFAULT_OUTPUT_CAP,
        grace_s: float = DEFAULT_GRACE_S,
    ) -> None:
        self.address = address
        self.output_cap = output_cap
        self.grace_s = grace_s
        self.cancel = threading.Event()
        self._lock = threading.Lock()
        self._cluster = RayConnection(address)
        self._remote: Any = None

    def connect(self) -> None:
        """Join the cluster at `address`, or start a small local instance (loopback only)."""
        with self._lock:
            if self._remote is not None:
                return
            self._cluster.connect()
            self._remote = ray.remote(run_attempt_on_node)

    def execute(self, invocation: Invocation, paths: AttemptPaths) -> ProcessOutcome:
        self.connect()
        options: dict[str, Any] = {
            "num_cpus": invocation.cpus if invocation.cpus is not None else 1,
            "max_retries": 0,  # a lost node is an executor_failed row, never a silent rerun
        }
        if invocation.memory_mb is not None:
            options["memory"] = invocation.memory_mb * 1024 * 1024
        ref = self._remote.options(**options).remote(
            invocation,
            paths.task_file.read_bytes(),
            paths.root.name,
            self.output_cap,
            self.grace_s,
        )
        while not ray.wait([ref], timeout=_WAIT_S)[0]:
            if self.cancel.is_set():
                return self._cancel(ref)
        try:
            attempt: RemoteAttempt = ray.get(ref)
        except ray.exceptions.TaskCancelledError:
            return _cancelled()
        except ray.exceptions.RayError as exc:
            raise RayTaskFailed(_failure_message(exc)) from None
        _write_returned(paths, attempt)
        return attempt.outcome

    def _cancel(self, ref: Any) -> ProcessOutcome:
        """Ask the task to stop (its harness group is killed on the node), then insist."""
        ray.cancel(ref, force=False)
        if not ray.wait([ref], timeout=self.grace_s + 5.0)[0]:
            ray.cancel(ref, force=True)
        return _cancelled()

    def cleanup(self) -> None:
        """Every in-flight task was cancelled by its own `execute` once `cancel` was set."""

    def reap(self, paths: AttemptPaths) -> bool:
        """A dead driver's tasks die with its Ray job; the driver's folder holds no process."""
        return False

    def close(self) -> None:
        with self._lock:
            self._cluster.close()
            self._remote = None
