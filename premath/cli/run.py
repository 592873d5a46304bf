"""`premath run`: one task through one harness, outside any experiment."""

from __future__ import annotations

import click

from premath.cli._options import IntRange, json_option
from premath.cli._root import AppContext, Reply, StrictCommand, pass_app

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def run_text(document: dict[str, Any]) -> str:
    lines = [
        "premath run",
        f"  Outcome: {document['outcome']}"
        + (f" ({document['error_class']})" if document["error_class"] else ""),
    ]
    if document["message"]:
        lines.append(f"  Message: {document['message']}")
    if document["objective"] is not None:
        objective = document["objective"]
        lines.append(f"  Objective: {objective['name']} = {objective['value']:g}")
    exit_text = (
        document["exit_code"] if document["signal"] is None else f"signal {document['signal']}"
    )
    lines += [
        f"  Exit: {exit_text}  Duration: {document['duration_ms']} ms",
        f"  Folder: {document['trial_dir']}",
    ]
    return "\n".join(lines)


@click.command("run", cls=StrictCommand)
@click.argument("task_file", metavar="TASK.json")
@click.option("--command", "command", required=True, help="Harness command (split like a shell)")
@click.option("--arg", "args", multiple=True, help="Argument added before the two paths (repeat)")
@click.option("--env", "env", multiple=True, help="NAME=VALUE for the harness (repeat)")
@click.option(
    "--timeout-ms",
    type=IntRange(1),
    default=300_000,
    show_default=True,
    help="Deadline; the harness's process group is killed after it",
)
@click.option(
    "--executor",
    type=click.Choice(["local", "docker"]),
    default="local",
    show_default=True,
    help="local: a process on this machine; docker: a container of --image",
)
@click.option("--image", help="Harness image (docker executor)")
@click.option("--memory-mb", type=IntRange(16), help="Memory cap in MiB")
@click.option(
    "--out",
    "out_dir",
    help="Empty folder for the trial [default: .premath/runs/single-<stamp> in the project root]",
)
@json_option
@pass_app
def run(
    app: AppContext,
    task_file: str,
    command: str,
    args: tuple[str, ...],
    env: tuple[str, ...],
    timeout_ms: int,
    executor: str,
    image: str | None,
    memory_mb: int | None,
    out_dir: str | None,
) -> Reply:
    """Run one task through a harness. It is run as `{command} {args} <task.json>
    <result.json>`.

    Exit 0 when the outcome is success, 1 otherwise (the document says why).

    \b
    premath run --command "python harness.py" --arg --temperature --arg 0.9 \\
        task.json --json
    """
    from premath.runner.single import run_single

    document = run_single(
        task_file,
        command=command,
        args=args,
        env=env,
        timeout_ms=timeout_ms,
        executor=executor,  # type: ignore[arg-type]
        image=image,
        memory_mb=memory_mb,
        out_dir=out_dir,
        now=app.clock.now(),
    )
    return Reply(document, text=run_text, exit_code=0 if document["outcome"] == "success" else 1)
