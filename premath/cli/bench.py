"""`premath bench run|tool|record`: unattended benchmark runs with ATIF trajectories.

Benchmark mode exists only under this group: nothing else grants `full-access` (specs/bench-run.md).
"""

from __future__ import annotations

import click

from premath.bench.defaults import (
    DEFAULT_OUTPUT_CAP,
    DEFAULT_SANDBOX_BACKEND,
    DEFAULT_TIMEOUT_S,
    DEFAULT_TOOL_TIMEOUT_S,
)
from premath.cli._options import FloatRange, IntRange, json_option, project_path_option
from premath.cli._root import AppContext, Reply, StrictGroup, pass_app

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def tool_text(document: dict[str, Any]) -> str:
    text: str = document["stdout"]
    return text.removesuffix("\n")


def record_text(document: dict[str, Any]) -> str:
    return f"recorded {document['source']} row in {document['run_dir']}"


def _split_command(command: str) -> list[str]:
    import shlex

    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise click.UsageError(f"--command cannot be split into arguments: {exc}") from exc
    if not argv:
        raise click.UsageError("--command is empty; give the harness command line")
    return argv


@click.group("bench", cls=StrictGroup)
def bench() -> None:
    """Run benchmark tasks headlessly (ATIF, summaries).

    Each run leaves comparable artifacts: raw events, an ATIF trajectory, a summary and its
    metadata; see specs/bench-run.md.
    """


@bench.command("run")
@click.option("--task", "task_path", help="Task file: a JSON object with an 'instruction'.")
@click.option("--instruction", help="The task's instruction text (instead of --task).")
@click.option("--command", required=True, help="Harness command line; gets TASK.json RESULT.json.")
@click.option("--run-dir", help="New folder for the run's artifacts (must not exist).")
@click.option("--policy", "policy_path", help="JSON file of deny rules that still apply.")
@click.option(
    "--timeout",
    type=FloatRange(min=0, min_open=True),
    default=DEFAULT_TIMEOUT_S,
    show_default=True,
    help="Seconds before the harness is killed.",
)
@click.option("--cwd", type=click.Path(file_okay=False), help="Harness working folder.")
@click.option("--dataset-id", help="Dataset, e.g. terminal-bench@2.0 (else the task file's).")
@click.option("--task-id", help="Task id (else the task file's).")
@click.option("--model-provider", help="Model provider, recorded in the metadata.")
@click.option("--model-name", help="Model name, recorded in the metadata and the trajectory.")
@click.option("--harness-image", help="Container image of the harness, if any.")
@click.option("--harness-version", help="Harness version (else what result.json reports).")
@click.option(
    "--sandbox-backend",
    default=DEFAULT_SANDBOX_BACKEND,
    show_default=True,
    help="What isolates it: docker runs the harness (and its tool calls) in a container of "
    "--harness-image; other values are recorded as labels.",
)
@click.option(
    "--network",
    type=click.Choice(["none", "full"]),
    default="none",
    show_default=True,
    help="The container's network with --sandbox-backend docker.",
)
@click.option("--atif-schema-version", help="ATIF version to write (default: ATIF-v1.8).")
@click.option(
    "--output-cap",
    type=IntRange(min=1),
    default=DEFAULT_OUTPUT_CAP,
    show_default=True,
    help="Bytes of harness stdout/stderr kept in raw/.",
)
@click.option("--pass-env", multiple=True, help="Pass this environment variable to the harness.")
@click.option("--session-id", help="ATIF session_id, e.g. Harbor's session (default: the run id).")
@click.option(
    "--live-trajectory",
    type=click.Path(dir_okay=False),
    help="Also keep the trajectory here, current while the harness runs.",
)
@json_option
@pass_app
def bench_run(app: AppContext, /, **options: Any) -> Reply:
    """Run one task unattended and leave its artifacts. Approval mode full-access, deny rules
    applied.

    Ends with one completion line (or one JSON document): status, exit code, artifact paths.

    \b
    premath bench run --instruction "List /app" --command "python agent.py" --json
    """
    import sys
    from pathlib import Path

    from premath.bench.inputs import load_policy, load_task
    from premath.bench.run import BenchRequest, completion_line, run_benchmark

    task = load_task(options["task_path"], options["instruction"])
    command = _split_command(options["command"])
    request = BenchRequest(
        task=task,
        command=command,
        policy=load_policy(options["policy_path"]),
        premath_argv=[sys.executable, "-m", "premath"],
        run_dir=Path(options["run_dir"]) if options["run_dir"] else None,
        cwd=Path(options["cwd"]) if options["cwd"] else Path.cwd(),
        timeout_s=options["timeout"],
        output_cap=options["output_cap"],
        pass_env=tuple(options["pass_env"]),
        dataset_id=options["dataset_id"] or task.dataset_id,
        task_id=options["task_id"] or task.task_id,
        model_provider=options["model_provider"],
        model_name=options["model_name"],
        harness_image=options["harness_image"],
        harness_version=options["harness_version"],
        sandbox_backend=options["sandbox_backend"],
        network=options["network"],
        atif_schema_version=options["atif_schema_version"],
        session_id=options["session_id"],
        live_trajectory=Path(options["live_trajectory"]) if options["live_trajectory"] else None,
    )
    for name in request.missing_pass_env():
        click.echo(
            f"warning: --pass-env {name} is not set; the harness runs without it "
            "(run-metadata.json pass_env_missing lists it)",
            err=True,
        )
    document = run_benchmark(request, clock=app.clock, lock_timeout_s=app.lock_timeout())
    return Reply(document, text=completion_line, exit_code=document["exit_code"])


@bench.command("tool")
@click.option("--run-dir", required=True, help="The live run (task.json's premath.run_dir).")
@click.option("--call-id", help="Tool call id (default: call_<n>).")
@click.option("--message", help="The agent's message for this turn (opens a new step).")
@click.option("--function-name", default="exec", show_default=True, help="Tool name.")
@click.option(
    "--timeout",
    type=FloatRange(min=0, min_open=True),
    default=DEFAULT_TOOL_TIMEOUT_S,
    show_default=True,
    help="Seconds before the command is killed.",
)
@click.argument("argv", nargs=-1, required=True)
@json_option
@pass_app
def bench_tool(app: AppContext, /, run_dir: str, argv: tuple[str, ...], **options: Any) -> Reply:
    """Run one command for the harness, unless a deny rule refuses it. The call and its result
    are recorded.

    \b
    premath bench tool --run-dir RUN --json -- ls -la /app
    """
    from premath.bench.tool import run_tool

    document = run_tool(
        run_dir,
        list(argv),
        clock=app.clock,
        lock_timeout_s=app.lock_timeout(),
        call_id=options["call_id"],
        message=options["message"],
        function_name=options["function_name"],
        timeout_s=options["timeout"],
    )
    return Reply(document, text=tool_text, exit_code=0 if document["status"] == "ok" else 1)


@bench.command("record")
@click.option("--run-dir", required=True, help="The live run (task.json's premath.run_dir).")
@click.option("--row", required=True, help="One trajectory row as JSON (an ATIF step sans id).")
@json_option
@pass_app
def bench_record(app: AppContext, run_dir: str, row: str) -> Reply:
    """Record one trajectory row (message, usage, model) in a live run.

    \b
    premath bench record --run-dir RUN \\
        --row '{"source": "agent", "message": "Done"}'
    """
    from premath.bench.tool import record_row

    document = record_row(run_dir, row, clock=app.clock, lock_timeout_s=app.lock_timeout())
    return Reply(document, text=record_text)


def batch_text(document: dict[str, Any]) -> str:
    from premath.cli.experiment import trials_lines
    from premath.runner.report.render import report_text
    from premath.terminal import terminal_width, wrap

    width = terminal_width()
    lines = wrap(f"premath bench batch: {document['run_id']} ({document['run_dir']})", width)
    lines += trials_lines(document["trials"], width)
    lines += wrap(f"Summary: {document['report_path']}", width, indent="  ", hang="  ")
    return "\n".join([*lines, "", report_text(document["report"], width)])


@bench.command("batch")
@click.argument("sources", nargs=-1, required=True, metavar="TASKS...")
@click.option(
    "--variant",
    "variants",
    multiple=True,
    required=True,
    help="ID=COMMAND: one arm of the matrix (repeat; the first is the baseline).",
)
@click.option(
    "--replications",
    type=IntRange(1, 10_000),
    default=1,
    show_default=True,
    help="Runs of each (variant, task).",
)
@click.option(
    "--executor",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="Where each trial's bench run happens (ray: one Ray task per trial).",
)
@click.option(
    "--ray-address",
    envvar="RAY_ADDRESS",
    help="Ray cluster of the ray executor (default: RAY_ADDRESS, else a local Ray instance).",
)
@click.option(
    "--concurrency",
    type=IntRange(1, 256),
    default=1,
    show_default=True,
    help="Trials run at once.",
)
@project_path_option(
    "--runs-dir",
    default=".premath/bench/batches",
    help_text="Folder holding the batch's run folder.",
)
@click.option("--run-id", help="Name of the batch (default: batch-<UTC stamp>).")
@click.option(
    "--timeout",
    type=FloatRange(min=0, min_open=True),
    default=DEFAULT_TIMEOUT_S,
    show_default=True,
    help="Seconds before one trial's harness is killed.",
)
@click.option("--cwd", type=click.Path(file_okay=False), help="Harness working folder.")
@click.option("--policy", "policy_path", help="JSON file of deny rules for every trial.")
@click.option("--dataset-id", help="Dataset id recorded in every bench run.")
@click.option("--html", "html_path", help="Also write the summary as a self-contained HTML page.")
@click.option("--progress/--no-progress", default=None, help="Progress bar on stderr.")
@json_option
@pass_app
def bench_batch(
    app: AppContext, /, sources: tuple[str, ...], variants: tuple[str, ...], **options: Any
) -> Reply:
    """Run many tasks under several variants and compare them. One summary covers the batch.

    TASKS: task files, folders of them, Harbor task folders or a Harbor dataset's folder.
    Each trial is a normal bench run folder; the batch is an experiment run (resume it with
    `premath experiment resume`).

    \b
    premath bench batch tasks/ --variant base='python a.py' \\
        --variant new='python a.py --new'
    """
    import sys
    from pathlib import Path

    from premath.bench.batch import parse_variant, run_batch

    progress = options["progress"]
    document = run_batch(
        list(sources),
        [parse_variant(text) for text in variants],
        clock=app.clock,
        lock_timeout=app.lock_timeout(),
        runs_dir=options["runs_dir"],
        run_id=options["run_id"],
        executor=options["executor"],
        ray_address=options["ray_address"],
        replications=options["replications"],
        concurrency=options["concurrency"],
        cwd=Path(options["cwd"]) if options["cwd"] else None,
        timeout_s=options["timeout"],
        policy=options["policy_path"],
        dataset_id=options["dataset_id"],
        html_path=options["html_path"],
        show_progress=sys.stderr.isatty() if progress is None else progress,
    )
    from premath.runner.runs import every_trial_errored

    reason = every_trial_errored(document)
    if reason is not None:
        click.echo(f"error: {reason}", err=True)
    return Reply(document, text=batch_text, exit_code=0 if reason is None else 1)
