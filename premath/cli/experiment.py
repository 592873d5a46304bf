"""`premath experiment validate|run|resume|report`: clean-harness experiments.

specs/experiment.md is the contract.
"""

from __future__ import annotations

import sys

import click

from premath.cli._options import FloatRange, IntRange, json_option, project_path_option
from premath.cli._root import AppContext, Reply, StrictGroup, pass_app

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RUNS_DIR = ".premath/runs"
EXECUTORS = ["local", "docker", "ray"]

runs_dir_option = project_path_option(
    "--runs-dir", default=RUNS_DIR, help_text="Folder holding run folders"
)
concurrency_option = click.option(
    "--concurrency",
    type=IntRange(1, 256),
    help="Trials run at once (default: the experiment's `concurrency`, else 1)",
)
ray_address_option = click.option(
    "--ray-address",
    envvar="RAY_ADDRESS",
    help="Ray cluster of the ray executor, e.g. 10.0.0.5:6379 (default: RAY_ADDRESS, else a "
    "local Ray instance started for this command)",
)
progress_option = click.option(
    "--progress/--no-progress",
    default=None,
    help="Progress bar on stderr (default: only when stderr is a terminal)",
)


fail_on_error_option = click.option(
    "--fail-on-error",
    is_flag=True,
    help="Exit 1 when any final trial ended in error (the summary is still printed)",
)
fail_on_error_rate_option = click.option(
    "--fail-on-error-rate",
    type=FloatRange(0.0, 1.0),
    metavar="RATE",
    help="Exit 1 when the share of final trials that ended in error is above RATE (0..1)",
)


def _error_gate(document: dict[str, Any], any_error: bool, max_rate: float | None) -> int:
    """1 when every trial ended in error, or as the --fail-on-error options ask; the reason
    goes to stderr."""
    from premath.runner.runs import error_gate_failure, every_trial_errored

    reason = every_trial_errored(document) or error_gate_failure(
        document, 0.0 if any_error else max_rate
    )
    if reason is None:
        return 0
    click.echo(f"error: {reason}", err=True)
    return 1


def _show_progress(flag: bool | None) -> bool:
    return sys.stderr.isatty() if flag is None else flag


def validate_text(document: dict[str, Any]) -> str:
    from premath.terminal import counted

    return "\n".join(
        [
            "premath experiment validate",
            f"  Experiment: {document['experiment_id']} ({document['path']})",
            f"  Variants: {', '.join(document['variants'])}",
            f"  Trials: {document['trials']} ({counted(len(document['variants']), 'variant')} x "
            f"{counted(document['tasks'], 'task')} x "
            f"{counted(document['replications'], 'replication')})",
            f"  Executor: {document['executor']}",
            f"  Digest: {document['digest']}",
        ]
    )


def trials_lines(trials: dict[str, int], width: int) -> list[str]:
    """The `  Trials: ...` line of a run (or batch) summary, fitted to `width`."""
    from premath.terminal import wrap

    return wrap(
        f"Trials: {trials['scheduled']} scheduled, {trials['ran']} run now; "
        f"{trials['success']} success, {trials['failure']} failure, {trials['error']} error, "
        f"{trials['pending']} pending",
        width,
        indent="  ",
        hang="  ",
    )


def run_text(document: dict[str, Any]) -> str:
    """The run in words, fitted to the terminal; errors by their most common messages."""
    from premath.terminal import terminal_width, wrap

    width = terminal_width()
    trials, run_id = document["trials"], document["run_id"]
    lines = [f"premath {document['action'].replace('.', ' ')}", f"  Run: {run_id}"]
    lines += wrap(f"Folder: {document['run_dir']}", width, indent="  ", hang="  ")
    lines += trials_lines(trials, width)
    if document["error_messages"]:
        lines.append("  Errors, most common first:")
        for error in document["error_messages"]:
            text = f"{error['count']} x {error['error_class']}: {error['message']}"
            lines += wrap(text, width, indent="    ", hang="  ")
    next_step = f"premath experiment report {run_id}"
    if (
        trials["error"]
        and trials["error"] == trials["success"] + trials["failure"] + trials["error"]
    ):
        next_step = f"fix the cause above, then premath experiment resume {run_id} --rerun-errors"
    lines += wrap(f"Next: {next_step}", width, indent="  ", hang="  ")
    return "\n".join(lines)


@click.group("experiment", cls=StrictGroup)
def experiment() -> None:
    """Run a harness under variants and compare them.

    A run is every (variant, task, replication) trial; see specs/experiment.md.
    """


@experiment.command("validate")
@click.argument("experiment_file", metavar="EXPERIMENT.yaml")
@click.option(
    "--executor",
    type=click.Choice(EXECUTORS),
    help="Check against this executor (default: the file's `executor`, else local)",
)
@json_option
def experiment_validate(experiment_file: str, executor: str | None) -> Reply:
    """Check an experiment file and its dataset. Every problem is listed at once.

    \b
    premath experiment validate examples/clean_harness/experiment.yaml
    """
    from premath.runner.experiment import validate_experiment

    return Reply(
        validate_experiment(experiment_file, executor),  # type: ignore[arg-type]
        text=validate_text,
    )


@experiment.command("run")
@click.argument("experiment_file", metavar="EXPERIMENT.yaml")
@click.option(
    "--executor",
    type=click.Choice(EXECUTORS),
    help="local: a process on this machine; docker: one container per trial; ray: one Ray "
    "task per trial (default: the file's `executor`, else local)",
)
@ray_address_option
@runs_dir_option
@click.option("--run-id", help="Name of the run folder (default: <experiment id>-<UTC stamp>)")
@concurrency_option
@click.option("--issue-id", help="Issue id written on the run's trajectory rows")
@click.option(
    "--trajectory",
    "trajectory_path",
    help="Trajectory JSONL for trial start/end rows (default: the run folder's)",
)
@progress_option
@fail_on_error_option
@fail_on_error_rate_option
@json_option
@pass_app
def experiment_run(
    app: AppContext,
    experiment_file: str,
    executor: str | None,
    ray_address: str | None,
    runs_dir: str,
    run_id: str | None,
    concurrency: int | None,
    issue_id: str | None,
    trajectory_path: str | None,
    progress: bool | None,
    fail_on_error: bool,
    fail_on_error_rate: float | None,
) -> Reply:
    """Run every trial of an experiment into a new run folder.

    \b
    premath experiment run examples/clean_harness/experiment.yaml \\
        --concurrency 4 --json
    premath experiment run experiment.yaml --fail-on-error-rate 0.1   # CI gate
    """
    from premath.runner.runs import run_experiment

    document = run_experiment(
        experiment_file,
        clock=app.clock,
        lock_timeout=app.lock_timeout(),
        runs_dir=runs_dir,
        run_id=run_id,
        executor=executor,  # type: ignore[arg-type]
        ray_address=ray_address,
        concurrency=concurrency,
        issue_id=issue_id,
        trajectory_path=trajectory_path,
        show_progress=_show_progress(progress),
    )
    exit_code = _error_gate(document, fail_on_error, fail_on_error_rate)
    return Reply(document, text=run_text, exit_code=exit_code)


@experiment.command("resume")
@click.argument("run_ref", metavar="RUN")
@runs_dir_option
@click.option("--rerun-errors", is_flag=True, help="Also run again the trials that ended in error")
@concurrency_option
@ray_address_option
@progress_option
@fail_on_error_option
@fail_on_error_rate_option
@json_option
@pass_app
def experiment_resume(
    app: AppContext,
    run_ref: str,
    runs_dir: str,
    rerun_errors: bool,
    concurrency: int | None,
    ray_address: str | None,
    progress: bool | None,
    fail_on_error: bool,
    fail_on_error_rate: float | None,
) -> Reply:
    """Continue an interrupted run without redoing finished trials. RUN: a run id or folder.

    \b
    premath experiment resume demo --rerun-errors
    """
    from premath.runner.runs import resume_experiment

    document = resume_experiment(
        run_ref,
        clock=app.clock,
        lock_timeout=app.lock_timeout(),
        runs_dir=runs_dir,
        rerun_errors=rerun_errors,
        concurrency=concurrency,
        show_progress=_show_progress(progress),
        ray_address=ray_address,
    )
    exit_code = _error_gate(document, fail_on_error, fail_on_error_rate)
    return Reply(document, text=run_text, exit_code=exit_code)


@experiment.command("report")
@click.argument("run_ref", metavar="RUN")
@runs_dir_option
@click.option(
    "--resamples",
    type=IntRange(100, 1_000_000),
    default=2000,
    show_default=True,
    help="Bootstrap resamples",
)
@click.option(
    "--confidence",
    type=FloatRange(0.5, 0.999),
    default=0.95,
    show_default=True,
    help="Confidence level of the intervals",
)
@click.option("--seed", type=int, help="Bootstrap seed (default: the experiment's design.seed)")
@click.option("--html", "html_path", help="Also write a self-contained HTML page here")
@json_option
def experiment_report(
    run_ref: str,
    runs_dir: str,
    resamples: int,
    confidence: float,
    seed: int | None,
    html_path: str | None,
) -> Reply:
    """Compare each variant with the baseline, task by task. Pass rates, errors, tests, CIs and
    the task grid; --html also writes a self-contained page.

    \b
    premath experiment report demo --html demo.html
    """
    from premath.runner.report.analysis import report_run
    from premath.runner.report.render import report_text

    document = report_run(
        run_ref,
        runs_dir=runs_dir,
        resamples=resamples,
        confidence=confidence,
        seed=seed,
        html_path=html_path,
    )
    return Reply(document, text=report_text)
