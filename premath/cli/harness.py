"""`premath harness boot|step|claim|complete|stop`: the loop's hooks, one command each.

An agent that is itself the worker drives the same cycle the loops run:
`boot`, then `step --work-cmd ...` (or `claim`, its own work, `complete --verify-cmd ...`),
then `stop`.
"""

from __future__ import annotations

import click

from premath.cli._options import IntRange, json_option
from premath.cli._remote import authority_options
from premath.cli._root import AppContext, Reply, StrictGroup, pass_app
from premath.cli.harness_loop import (
    loop_options,
    loop_paths,
    memory_path_options,
    one_worker,
    remote_authority,
    report_progress,
    worker_authority,
    worker_identity_options,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def boot_text(document: dict[str, Any]) -> str:
    target = document["nextTarget"]
    lines = [
        "premath harness boot",
        f"  Result: {document['result']}",
        f"  Ready: {document['readyCount']}",
        f"  Next Target: {target['issueId'] or 'none'}"
        + (f" ({target['source']})" if target["source"] else ""),
    ]
    lines += [f"  - {finding['class']}: {finding['message']}" for finding in document["findings"]]
    return "\n".join(lines)


def step_text(document: dict[str, Any]) -> str:
    title = f"premath {document['action'].replace('.', ' ')}"
    if document.get("stepId") is None:
        return f"{title}\n  No ready issue to claim"
    return "\n".join(
        (
            title,
            f"  Step: {document['stepId']}",
            f"  Outcome: {document['outcome']} ({document['resultClass']})",
            f"  Next Step: {document['nextStep']}",
        )
    )


@click.group("harness", cls=StrictGroup)
def harness() -> None:
    """The loop's hooks for an agent that is its own worker.

    boot, then step (or claim, your work, complete), then stop; see specs/harness-loop.md.
    """


@harness.command("boot")
@memory_path_options
@click.option("--startup-cmd", envvar="PREMATH_STARTUP_CMD", help="Startup verification command")
@click.option("--worktree-root", default=".", show_default=True, help="cwd of the startup command")
@click.option(
    "--command-timeout-seconds",
    "--timeout",
    "command_timeout_seconds",
    type=float,
    default=1800.0,
    show_default=True,
    help="Deadline of the startup command in seconds",
)
@click.option("--pass-env", multiple=True, help="Variable passed to the startup command")
@authority_options
@json_option
@pass_app
def harness_boot(app: AppContext, /, **options: Any) -> Reply:
    """Check the project and pick the next issue to work on. Memory roots, dependency cycles,
    the session handoff and an optional startup command are checked.

    \b
    premath harness boot --json
    """
    from premath.harness.boot import boot_report

    with remote_authority(options, "boot") as memory:
        document = boot_report(
            loop_paths(options),
            now=app.clock.now(),
            startup_cmd=options["startup_cmd"],
            worktree=options["worktree_root"],
            timeout_s=options["command_timeout_seconds"],
            pass_env=tuple(options["pass_env"]),
            memory=memory,
        )
    return Reply(document, text=boot_text, exit_code=0 if document["result"] == "accepted" else 1)


def _worker_options(function: Any) -> Any:
    function = click.option(
        "--step-index",
        type=IntRange(min=1),
        default=1,
        show_default=True,
        help="Index of this step in the worker's run (names the step id)",
    )(function)
    return loop_options(worker_identity_options(authority_options(function)))


@harness.command("step")
@_worker_options
@json_option
@pass_app
def harness_step(app: AppContext, /, **options: Any) -> Reply:
    """Claim one ready issue, work, verify, then close or escalate it. Closing waits for the join
    gate (specs/join-check.md).

    \b
    premath harness step --worker-id me --work-cmd 'make fix' --json
    """
    from premath.harness.worker import run_one_step

    step_index = options.pop("step_index")
    with worker_authority(options) as (memory, _, _):
        cfg = one_worker(app, options, memory=memory)
        document, exit_code = run_one_step(cfg, step_index, app.clock, report=report_progress)
    return Reply(document, text=step_text, exit_code=exit_code)


@harness.command("claim")
@_worker_options
@json_option
@pass_app
def harness_claim(app: AppContext, /, **options: Any) -> Reply:
    """Claim one ready issue and start its step. Do the work yourself, then run
    `premath harness complete`.

    \b
    premath harness claim --worker-id me --json
    """
    from premath.harness.step import claim_for_agent

    step_index = options.pop("step_index")
    with worker_authority(options) as (memory, _, _):
        cfg = one_worker(app, options, memory=memory)
        document = claim_for_agent(cfg, step_index, app.clock)
    return Reply(document, text=lambda d: d.get("nextStep", "no ready issue to claim"))


@harness.command("complete")
@_worker_options
@click.option("--issue-id", help="The claimed issue [default: the session's issue]")
@json_option
@pass_app
def harness_complete(app: AppContext, /, **options: Any) -> Reply:
    """Verify your work on the claimed issue, then close or escalate it. Closing waits for the
    join gate (specs/join-check.md).

    \b
    premath harness complete --worker-id me --issue-id bd-1 --json
    """
    from premath.harness.step import complete_claim

    step_index = options.pop("step_index")
    issue_id = options.pop("issue_id")
    with worker_authority(options) as (memory, _, _):
        cfg = one_worker(app, options, agent_did_work=True, memory=memory)
        report = complete_claim(cfg, issue_id, step_index, app.clock, report=report_progress)
    document = {"action": "harness.complete", **report.to_document()}
    return Reply(document, text=step_text, exit_code=report.exit_code)


@harness.command("stop")
@memory_path_options
@click.option("--worker-id", envvar="PREMATH_WORKER_ID", default="", help="Worker id")
@click.option("--issue-id", help="Issue to stop on [default: the session's issue]")
@click.option("--release", is_flag=True, help="Give the lease back instead of renewing it")
@click.option(
    "--lease-ttl-seconds",
    type=IntRange(30, 86400),
    default=3600,
    show_default=True,
    help="TTL of the renewed lease",
)
@click.option("--summary", help="Handoff summary")
@click.option("--next-step", help="Next step for the agent that resumes")
@click.option(
    "--step-index",
    type=IntRange(min=1),
    default=1,
    show_default=True,
    help="Index of the interrupted step (names its trajectory row)",
)
@authority_options
@json_option
@pass_app
def harness_stop(app: AppContext, /, **options: Any) -> Reply:
    """Save the handoff so the next agent can resume. Session stopped, lease renewed or
    released, the interrupted step logged.

    \b
    premath harness stop --worker-id me --release --json
    """
    from premath.harness.stop import stop_worker

    with remote_authority(options, options["worker_id"]) as memory:
        document = stop_worker(
            loop_paths(options),
            worker_id=options["worker_id"],
            now=app.clock.now(),
            lock_timeout_s=app.lock_timeout(),
            issue_id=options["issue_id"],
            release=options["release"],
            lease_ttl_s=options["lease_ttl_seconds"],
            summary=options["summary"],
            next_step=options["next_step"],
            step_index=options["step_index"],
            memory=memory,
        )
    return Reply(
        document,
        text=lambda d: (
            f"premath harness stop\n  Issue: {d['issueId']}\n  Lease: "
            f"{d['leaseOutcome']} ({d['leaseState']})\n  Next Step: {d['nextStep']}"
        ),
    )
