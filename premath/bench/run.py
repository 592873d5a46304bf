"""One unattended benchmark run: spawn the harness, then leave four artifacts in a new folder.

Order (specs/bench-run.md): check every input, create the run folder exclusively (an existing
folder is refused, never reused), record events, run the harness under the deny rules with
approval mode `full-access`, classify the outcome, export and validate the ATIF trajectory, write
`run-metadata.json`, then `summary.json` last (its presence means the run is over). A run
succeeds only if the harness succeeded and its trajectory validates; every artifact written so
far stays on any failure.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import orjson

from premath import __version__
from premath.bench.defaults import (
    DEFAULT_OUTPUT_CAP,
    DEFAULT_SANDBOX_BACKEND,
    DEFAULT_TIMEOUT_S,
)
from premath.bench.events import append_event, event_time
from premath.bench.paths import BenchRunPaths, new_run_dir
from premath.bench.policy import policy_digest
from premath.errors import Conflict, InputInvalid, IoFailure
from premath.runner.interrupts import stop_signals_raise
from premath.runner.process import passed_env
from premath.store.atomic import write_atomic
from premath.store.canonical import document_bytes
from premath.store.jsonl import parsed_rows
from premath.timefmt import format_seconds_z

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.clock import Clock
    from premath.models.bench import (
        BenchPolicy,
        BenchTask,
        FailureClass,
        HarnessProcess,
        Outcome,
        RunMetadata,
        RunStatus,
        RunSummary,
    )
    from premath.runner.containers import ImageIdentity
    from premath.runner.process import ProcessOutcome

AGENT_NAME = "premath"
LIVE_EXPORT_INTERVAL_S = 1.0
"""How often the trajectory is re-exported while the harness runs (when events grew)."""
RESULT_SIZE_CAP = 1 << 20
HARNESS_ROWS_CAP = 64 << 20


@dataclass(frozen=True)
class BenchRequest:
    """Everything `premath bench run` was asked to do, already checked."""

    task: BenchTask
    command: list[str]
    policy: BenchPolicy
    premath_argv: list[str]
    """How the harness calls premath back (`bench tool`, `bench record`)."""
    run_dir: Path | None = None
    cwd: Path = field(default_factory=Path.cwd)
    timeout_s: float = DEFAULT_TIMEOUT_S
    output_cap: int = DEFAULT_OUTPUT_CAP
    pass_env: tuple[str, ...] = ()
    dataset_id: str | None = None
    task_id: str | None = None
    model_provider: str | None = None
    model_name: str | None = None
    harness_image: str | None = None
    harness_version: str | None = None
    sandbox_backend: str = DEFAULT_SANDBOX_BACKEND
    network: str = "none"
    """The container's network with `--sandbox-backend docker`: `none` or `full`."""
    atif_schema_version: str | None = None
    session_id: str | None = None
    """ATIF `session_id` (e.g. Harbor's session); the run id when None."""
    live_trajectory: Path | None = None
    """A second copy of the trajectory, kept current while the harness runs (Harbor's
    `/logs/agent/trajectory.json`), so a run killed from outside still leaves a valid one."""

    def missing_pass_env(self) -> list[str]:
        """Names listed to pass through that are not set here: recorded and warned about."""
        return [name for name in self.pass_env if name not in os.environ]


@dataclass
class _Verdict:
    failure_class: FailureClass | None = None
    failure_message: str | None = None
    outcome: Outcome | None = None
    harness_reported_version: str | None = None

    def fail(self, failure_class: FailureClass, message: str) -> None:
        """Keep the first failure: checks run in the order specs/bench-run.md gives."""
        if self.failure_class is None:
            self.failure_class, self.failure_message = failure_class, " ".join(message.split())


def create_run_folder(run_dir: Path) -> BenchRunPaths:
    """Make the run folder, refusing one that exists: a retry gets a new folder."""
    try:
        run_dir.parent.mkdir(parents=True, exist_ok=True)
        run_dir.mkdir()
    except FileExistsError as exc:
        raise Conflict(
            f"run folder {run_dir} already exists; runs are never overwritten: pass a new "
            "--run-dir, or omit it for a fresh folder"
        ) from exc
    except OSError as exc:
        raise IoFailure(f"cannot create run folder {run_dir}: {exc.strerror or exc}") from exc
    paths = BenchRunPaths(run_dir)
    for folder in (paths.raw, paths.task_input.parent, paths.result.parent, paths.tools_dir):
        folder.mkdir()
    return paths


def _harness_input(request: BenchRequest, paths: BenchRunPaths) -> dict[str, Any]:
    from premath.bench.container import CONTAINER_PREMATH_ARGV, DOCKER_BACKEND
    from premath.models.bench import APPROVAL_MODE

    run_dir = os.fspath(paths.root.resolve())
    in_container = request.sandbox_backend == DOCKER_BACKEND
    callback = [*(CONTAINER_PREMATH_ARGV if in_container else request.premath_argv), "bench"]
    model = {"provider": request.model_provider, "name": request.model_name}
    return {
        **request.task.model_dump(mode="json", exclude_none=True),
        "task_id": request.task_id,
        "dataset_id": request.dataset_id,
        **({"model": model} if request.model_name is not None else {}),
        "premath": {
            "run_dir": run_dir,
            "approval_mode": APPROVAL_MODE,
            "tool": [*callback, "tool", "--run-dir", run_dir, "--json"],
            "record": [*callback, "record", "--run-dir", run_dir, "--json"],
        },
    }


def reported_harness_version(path: Path) -> str | None:
    """`harness_version` from result.json, when the harness reports one (else None)."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(RESULT_SIZE_CAP + 1)
        document = orjson.loads(raw)
    except (OSError, orjson.JSONDecodeError):
        return None
    version = document.get("harness_version") if isinstance(document, dict) else None
    return version if isinstance(version, str) else None


def _model_name(request: BenchRequest, document: dict[str, Any]) -> str | None:
    if request.model_name is not None:
        return request.model_name
    for step in document.get("steps") or ():
        if isinstance(step, dict) and isinstance(step.get("model_name"), str):
            name: str = step["model_name"]
            return name
    return None


def _tool_counts(events: list[Any]) -> dict[str, int]:
    kinds = [event.get("kind") for event in events if isinstance(event, dict)]
    return {"calls": kinds.count("tool.call"), "denied": kinds.count("tool.denied")}


class Interrupted(Exception):
    """premath itself got SIGTERM or SIGINT while the harness ran (the signal's name)."""


def _run_harness(
    request: BenchRequest, paths: BenchRunPaths, record: Callable[..., None], verdict: _Verdict
) -> HarnessProcess:
    """Spawn, wait, judge; the `harness` block of summary.json."""
    from premath.bench.container import DOCKER_BACKEND
    from premath.bench.policy import matching_rule
    from premath.models.bench import HarnessProcess
    from premath.runner.process import allowlisted_env, run_bounded
    from premath.runner.results import judge

    # Absolute: the harness runs in --cwd, not where the run folder was named from.
    argv = [
        *request.command,
        os.fspath(paths.task_input.resolve()),
        os.fspath(paths.result.resolve()),
    ]
    denied = matching_rule(request.policy.deny, request.command)
    if denied is not None:
        described = f"deny[{denied[0]}] {denied[1].describe()}"
        record("harness.denied", argv=argv, rule=described)
        verdict.fail("command_denied", f"the harness command is refused by {described}")
        return HarnessProcess(status="not_started")
    record("harness.started", argv=argv)
    passed = passed_env(request.pass_env)
    bounded: dict[str, Any] = {
        "timeout_s": request.timeout_s,
        "stdout_path": paths.harness_stdout,
        "stderr_path": paths.harness_stderr,
        "output_cap": request.output_cap,
    }
    try:
        with stop_signals_raise(Interrupted), _LiveExport(request, paths):
            if request.sandbox_backend == DOCKER_BACKEND:
                outcome = _run_in_container(request, paths, passed, argv, bounded)
            else:
                outcome = run_bounded(argv, cwd=request.cwd, env=allowlisted_env(passed), **bounded)
    except Interrupted as stop:
        verdict.fail("interrupted", f"premath received {stop}; the harness was stopped")
        record("harness.finished", status="interrupted")
        return HarnessProcess(status="interrupted")
    judged = judge(outcome, paths.result, stderr_file=paths.harness_stderr)
    if judged.error_class in (None, "harness_error"):  # a readable, valid result.json
        verdict.outcome = judged.outcome
        verdict.harness_reported_version = reported_harness_version(paths.result)
    if judged.error_class is not None:
        verdict.fail(judged.error_class, judged.message or judged.error_class)
    harness = HarnessProcess(
        status=outcome.status,
        exit_code=outcome.exit_code,
        signal=outcome.signal,
        duration_s=round(outcome.duration_s, 3),
        stdout_bytes=outcome.stdout_bytes,
        stderr_bytes=outcome.stderr_bytes,
        output_truncated=outcome.stdout_truncated or outcome.stderr_truncated,
        leftover_descendants=outcome.leftover_descendants or None,
    )
    record("harness.finished", **harness.model_dump(mode="json"))
    return harness


def _run_in_container(
    request: BenchRequest,
    paths: BenchRunPaths,
    passed: dict[str, str],
    argv: list[str],
    bounded: dict[str, Any],
) -> ProcessOutcome:
    from premath.bench.container import harness_container_argv, harness_container_name
    from premath.runner.containers import DockerEngine

    engine = DockerEngine()
    name = harness_container_name(paths.root)
    assert request.harness_image is not None  # checked before the run folder was made
    container_argv = harness_container_argv(
        engine=engine,
        name=name,
        image=request.harness_image,
        run_dir=paths.root.resolve(),
        cwd=request.cwd.resolve(),
        network=request.network,
        env=passed,
        harness_argv=argv,
    )
    return engine.run(name, container_argv, request.cwd, **bounded)


def _ingest_harness_rows(paths: BenchRunPaths, record: Callable[..., None]) -> None:
    """Append the rows of `out/trajectory.jsonl` (if the harness wrote one) as `harness.row`.

    They come after everything recorded live; bad lines are kept as they are and the exporter
    skips and counts them, so nothing the harness wrote is lost (specs/bench-run.md).
    """
    if not paths.harness_rows.is_file() or paths.harness_rows.is_symlink():
        return
    with paths.harness_rows.open("rb") as handle:
        budget = HARNESS_ROWS_CAP
        for number, line in enumerate(handle, start=1):
            budget -= len(line)
            if budget < 0:
                record("harness.rows_truncated", line=number, cap_bytes=HARNESS_ROWS_CAP)
                return
            if not line.strip():
                continue
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError:
                row = line.decode("utf-8", errors="replace").rstrip("\n")
            record("harness.row", row=row, origin=f"out/trajectory.jsonl:{number}")


def _write_trajectory(request: BenchRequest, paths: BenchRunPaths, events: list[Any]) -> Any:
    """Export the events so far to atif/trajectory.json (and the live copy); the Export."""
    from premath.atif.export import ExportContext, export_trajectory

    context = ExportContext(
        session_id=request.session_id or paths.run_id,
        agent_name=AGENT_NAME,
        agent_version=__version__,
        model_name=request.model_name,
        schema_version=request.atif_schema_version,
        trajectory_id=paths.run_id,
    )
    export = export_trajectory(events, context)
    data = document_bytes(export.document)
    write_atomic(paths.trajectory, data)
    if request.live_trajectory is not None:
        write_atomic(request.live_trajectory, data)
    return export


class _LiveExport:
    """While the harness runs, re-export the trajectory whenever the event log grew.

    Harbor stops a timed-out agent from outside; each export is atomic and valid ATIF, so the
    partial trajectory left behind is too (issue 11 "Timeouts").
    """

    def __init__(self, request: BenchRequest, paths: BenchRunPaths) -> None:
        self._request, self._paths = request, paths
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="atif-live-export", daemon=True)

    def _loop(self) -> None:
        seen = -1
        while not self._stop.wait(LIVE_EXPORT_INTERVAL_S):
            try:
                size = self._paths.events.stat().st_size
                if size != seen:
                    seen = size
                    _write_trajectory(
                        self._request, self._paths, list(parsed_rows(self._paths.events))
                    )
            except Exception:  # noqa: BLE001 - best effort: the final export reports failures
                continue

    def __enter__(self) -> _LiveExport:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()


def _export(
    request: BenchRequest, paths: BenchRunPaths, events: list[Any], verdict: _Verdict
) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """Write atif/trajectory.json from the events, validate the file; (document, errors)."""
    from premath.atif.export import written_errors

    export = _write_trajectory(request, paths, events)
    errors = written_errors(export, paths.trajectory)
    if errors:
        first = errors[0]
        verdict.fail(
            "atif_invalid",
            f"{paths.trajectory} is not valid ATIF: {first['location']}: {first['message']}",
        )
    return export.document, errors


def _checked_image(request: BenchRequest) -> ImageIdentity | None:
    """With the docker backend, the harness image's identity once it is known to work."""
    from premath.bench.container import DOCKER_BACKEND, check_harness_image
    from premath.runner.containers import DockerEngine

    if request.sandbox_backend != DOCKER_BACKEND:
        return None
    if request.network not in ("none", "full"):
        raise InputInvalid(f"--network {request.network!r}: choose none or full")
    return check_harness_image(DockerEngine(), request.harness_image, request.cwd)


def run_benchmark(request: BenchRequest, *, clock: Clock, lock_timeout_s: float) -> dict[str, Any]:
    """Run one task; the completion document (status, exit code, artifact paths)."""
    from premath.models.bench import APPROVAL_MODE

    image = _checked_request(request)
    started = clock.now()
    started_monotonic = time.monotonic()
    paths = create_run_folder(request.run_dir or new_run_dir(started))
    policy_bytes = document_bytes(request.policy.model_dump(mode="json"))
    write_atomic(paths.policy, policy_bytes)
    pinned_policy = policy_digest(policy_bytes)
    write_atomic(paths.task_input, document_bytes(_harness_input(request, paths)))

    def record(kind: str, **fields: Any) -> None:
        append_event(paths.events, kind, clock.now(), lock_timeout_s, **fields)

    record(
        "run.started",
        run_id=paths.run_id,
        approval_mode=APPROVAL_MODE,
        premath_version=__version__,
        dataset_id=request.dataset_id,
        task_id=request.task_id,
        deny_rules=len(request.policy.deny),
        policy_digest=pinned_policy,
    )
    record("task.instruction", text=request.task.instruction)
    verdict = _Verdict()
    harness = _run_harness(request, paths, record, verdict)
    _ingest_harness_rows(paths, record)
    events = list(parsed_rows(paths.events))
    trajectory, atif_errors = _export(request, paths, events, verdict)
    exit_code = 0 if verdict.failure_class is None else 1
    status: RunStatus = "succeeded" if exit_code == 0 else "failed"
    record("run.finished", status=status, exit_code=exit_code, failure_class=verdict.failure_class)
    model_name = _model_name(request, trajectory)
    metadata = _metadata(
        request,
        verdict,
        image,
        trajectory,
        started=started,
        exit_code=exit_code,
        session_id=request.session_id or paths.run_id,
        model_name=model_name,
        policy_digest=pinned_policy,
    )
    write_atomic(paths.metadata, document_bytes(metadata.model_dump(mode="json")))
    summary = _summary(
        request,
        verdict,
        harness,
        trajectory,
        atif_errors,
        events,
        status=status,
        exit_code=exit_code,
        model_name=model_name,
        span=(started, clock.now(), round(time.monotonic() - started_monotonic, 3)),
    )
    write_atomic(paths.summary, document_bytes(summary.model_dump(mode="json")))
    return completion_document(paths, summary)


def _checked_request(request: BenchRequest) -> ImageIdentity | None:
    """Refuse a request that cannot run before its run folder exists; with the docker
    backend, the harness image's identity once it is known to work."""
    from premath.atif.export import check_schema_version

    if request.atif_schema_version is not None:
        check_schema_version(request.atif_schema_version)
    if not request.command:
        raise InputInvalid("--command is empty; give the harness command line")
    if not request.cwd.is_dir():
        raise InputInvalid(f"--cwd {request.cwd} is not a folder")
    passed_env(request.pass_env)  # refuses PREMATH_* names before the run folder exists
    return _checked_image(request)


def _metadata(
    request: BenchRequest,
    verdict: _Verdict,
    image: ImageIdentity | None,
    trajectory: dict[str, Any],
    *,
    started: datetime,
    exit_code: int,
    session_id: str,
    model_name: str | None,
    policy_digest: str,
) -> RunMetadata:
    """meta/metadata.json: what ran (harness, image, dataset, model, policy) and how it ended."""
    from premath.bench.provenance import commit_sha
    from premath.models.bench import APPROVAL_MODE, HarnessIdentity, RunMetadata

    return RunMetadata(
        timestamp_utc=format_seconds_z(started),
        premath_commit_sha=commit_sha(),
        premath_version=__version__,
        harness=HarnessIdentity(
            command=request.command,
            image=request.harness_image,
            image_id=image.image_id if image else None,
            image_digest=image.repo_digest if image else None,
            version=request.harness_version or verdict.harness_reported_version,
        ),
        dataset_id=request.dataset_id,
        task_id=request.task_id,
        model_provider=request.model_provider,
        model_name=model_name,
        approval_mode=APPROVAL_MODE,
        sandbox_backend=request.sandbox_backend,
        atif_schema_version=trajectory.get("schema_version"),
        exit_status=exit_code,
        session_id=session_id,
        pass_env=list(request.pass_env),
        pass_env_missing=request.missing_pass_env(),
        policy_digest=policy_digest,
    )


def _summary(
    request: BenchRequest,
    verdict: _Verdict,
    harness: HarnessProcess,
    trajectory: dict[str, Any],
    atif_errors: list[dict[str, str]],
    events: list[Any],
    *,
    status: RunStatus,
    exit_code: int,
    model_name: str | None,
    span: tuple[datetime, datetime, float],
) -> RunSummary:
    """The run's summary: its verdict, (started, finished, seconds), usage, tool counts and
    the ATIF check."""
    from premath.models.bench import (
        APPROVAL_MODE,
        AtifError,
        ModelInfo,
        RunSummary,
        ToolCounts,
        TrajectoryCheck,
        Usage,
    )

    started, finished, duration_s = span
    totals = trajectory.get("final_metrics") or {}
    return RunSummary(
        status=status,
        exit_code=exit_code,
        failure_class=verdict.failure_class,
        failure_message=verdict.failure_message,
        outcome=verdict.outcome,
        started_at=event_time(started),
        finished_at=event_time(finished),
        duration_s=duration_s,
        usage=Usage(
            prompt_tokens=totals.get("total_prompt_tokens"),
            completion_tokens=totals.get("total_completion_tokens"),
            cached_tokens=totals.get("total_cached_tokens"),
            cost_usd=totals.get("total_cost_usd"),
        ),
        model=ModelInfo(provider=request.model_provider, name=model_name),
        approval_mode=APPROVAL_MODE,
        harness=harness,
        tools=ToolCounts(**_tool_counts(events)),
        trajectory=TrajectoryCheck(
            path="atif/trajectory.json",
            schema_version=trajectory.get("schema_version"),
            steps=len(trajectory.get("steps") or ()),
            valid=not atif_errors,
            errors=[AtifError(**error) for error in atif_errors],
        ),
    )


def completion_document(paths: BenchRunPaths, summary: RunSummary) -> dict[str, Any]:
    return {
        "status": summary.status,
        "exit_code": summary.exit_code,
        "failure_class": summary.failure_class,
        "failure_message": summary.failure_message,
        "run_dir": os.fspath(paths.root),
        "artifacts": {
            "raw": os.fspath(paths.raw),
            "trajectory": os.fspath(paths.trajectory),
            "summary": os.fspath(paths.summary),
            "metadata": os.fspath(paths.metadata),
        },
    }


def completion_line(document: dict[str, Any]) -> str:
    """The one deterministic line a benchmark run ends with (text mode)."""
    failure = ""
    if document["failure_class"] is not None:
        failure = f", {document['failure_class']}: {document['failure_message']}"
    artifacts = document["artifacts"]
    return (
        f"bench run {document['status']} (exit {document['exit_code']}{failure}): "
        f"run_dir={document['run_dir']} trajectory={artifacts['trajectory']} "
        f"summary={artifacts['summary']} metadata={artifacts['metadata']} raw={artifacts['raw']}"
    )
