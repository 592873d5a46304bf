"""`premath harness-loop worker|coordinator`: the gated multithread loop over issue memory."""

import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

from premath.cli._options import json_option
from premath.cli._root import AppContext, Reply, StrictGroup, pass_app
from premath.models.vocabulary import DEFAULT_ISSUES_PATH

F = TypeVar("F", bound=Callable[..., Any])


def report_progress(line: str) -> None:
    """Live progress for people watching a terminal; stdout stays one document."""
    click.echo(line, err=True)


def memory_path_options(function: F) -> F:
    """Where issue memory, session, ledger and trajectory live (relative to `--repo-root`)."""
    options = [
        click.option(
            "--repo-root", default=".", show_default=True, help="Base for relative memory paths"
        ),
        click.option(
            "--issues-path", default=DEFAULT_ISSUES_PATH, show_default=True, help="Issue memory"
        ),
        click.option("--session-path", default=".premath/harness_session.json", show_default=True),
        click.option(
            "--feature-ledger-path",
            default=".premath/harness_feature_ledger.json",
            show_default=True,
        ),
        click.option(
            "--trajectory-path", default=".premath/harness_trajectory.jsonl", show_default=True
        ),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def loop_options(function: F) -> F:
    """The options both modes share (specs/harness-loop.md "Worker"), then ours."""
    options = [
        click.option("--lease-ttl-seconds", type=int, default=3600, show_default=True),
        click.option(
            "--work-cmd", help="Shell command for the work [env PREMATH_WORK_CMD, else true]"
        ),
        click.option(
            "--verify-cmd",
            help="Shell command that verifies the work "
            "[env PREMATH_VERIFY_CMD, else mise run ci-check]",
        ),
        click.option(
            "--verify-witness",
            help="Witness JSON the verify command writes (relative to the worktree); its failure "
            "classes count as the verify's",
        ),
        click.option(
            "--witness-ref-prefix",
            help="Step witness prefix [env PREMATH_WITNESS_REF_PREFIX, else worker://loop]",
        ),
        click.option(
            "--mutation-mode",
            default="",
            help="instruction-linked (default) or human-override (needs --override-reason)",
        ),
        click.option("--override-reason", default="", help="Why a human override is in force"),
        click.option(
            "--host-action-transport",
            type=click.Choice(["mcp", "local-repl"]),
            default=None,
            help="mcp: lease recovery after a failure goes through the transport dispatch and "
            "records transport:// refs; unset: recovery in-process (D5-12)",
        ),
        click.option("--policy", "policy_path", default=None, help="Retry policy path"),
        click.option(
            "--command-timeout-seconds",
            type=float,
            default=1800.0,
            show_default=True,
            help="Deadline of each work/verify command; its process group is killed after it",
        ),
        click.option(
            "--output-cap-bytes",
            type=click.IntRange(min=1),
            default=8 * 1024 * 1024,
            show_default=True,
            help="Largest output kept per command stream; more fails the step's gate",
        ),
        click.option(
            "--backoff-scale",
            type=click.FloatRange(min=0.0),
            default=1.0,
            show_default=True,
            help="Multiplier of the retry policy's backoff delays (0 disables waiting)",
        ),
        click.option(
            "--pass-env",
            multiple=True,
            help="Environment variable to pass to work/verify commands (repeatable)",
        ),
    ]
    for option in reversed(options):
        function = option(function)
    return memory_path_options(function)


def worker_text(document: dict[str, Any]) -> str:
    return (
        f"[worker:{document['workerId']}] steps={document['stepCount']} "
        f"closed={document['closedCount']} failed={document['failedCount']} "
        f"stopped={document['stoppedReason']}"
    )


def coordinator_text(document: dict[str, Any]) -> str:
    return (
        f"[coordinator] rounds={document['roundCount']} closed={document['closedCount']} "
        f"failed={document['failedCount']} stopped={document['stoppedReason']}"
    )


@click.group("harness-loop", cls=StrictGroup)
def harness_loop() -> None:
    """Run worker and coordinator loops that take issues from ready to closed, gated."""


@harness_loop.command("worker")
@loop_options
@click.option("--worktree-root", default=".", show_default=True, help="cwd of work/verify")
@click.option(
    "--worker-id", envvar="PREMATH_WORKER_ID", default="", help="Worker id [env PREMATH_WORKER_ID]"
)
@click.option("--max-steps", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--continue-on-failure", is_flag=True, help="Keep claiming after a failed step")
@json_option
@pass_app
def harness_loop_worker(app: AppContext, /, **options: Any) -> Reply:
    """Claim, work, verify and close issues one at a time under a lease.

    \b
    premath harness-loop worker --worker-id w1 --max-steps 5 \\
        --work-cmd 'make fix' --verify-cmd 'make test' --json
    """
    from premath.harness.loop_config import make_worker_config
    from premath.harness.worker import run_worker

    max_steps = options.pop("max_steps")
    continue_on_failure = options.pop("continue_on_failure")
    cfg = make_worker_config(**worker_config_kwargs(options, app))
    report_progress(f"[worker:{cfg.worker_id}] override policy {cfg.authority.describe()}")
    outcome = run_worker(
        cfg,
        max_steps=max_steps,
        continue_on_failure=continue_on_failure,
        clock=app.clock,
        report=report_progress,
    )
    return Reply(outcome.to_document(), text=worker_text, exit_code=outcome.exit_code)


def worker_config_kwargs(options: dict[str, Any], app: AppContext) -> dict[str, Any]:
    """`make_worker_config` keywords from the loop options (consumed from `options`)."""
    return {
        "worker_id": options.pop("worker_id"),
        "repo_root": options.pop("repo_root"),
        "worktree": options.pop("worktree_root"),
        "issues_path": options.pop("issues_path"),
        "session_path": options.pop("session_path"),
        "ledger_path": options.pop("feature_ledger_path"),
        "trajectory_path": options.pop("trajectory_path"),
        "lease_ttl_s": options.pop("lease_ttl_seconds"),
        "witness_prefix": options.pop("witness_ref_prefix"),
        "command_timeout_s": options.pop("command_timeout_seconds"),
        "output_cap": options.pop("output_cap_bytes"),
        "pass_env": tuple(options.pop("pass_env")),
        "lock_timeout_s": app.lock_timeout(),
        **options,
    }


@harness_loop.command("coordinator")
@loop_options
@click.option(
    "--worktree",
    "worktrees",
    multiple=True,
    help="Worker worktree (repeatable) [env PREMATH_WORKTREES]",
)
@click.option("--rounds", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--worker-prefix", default="worker", show_default=True)
@click.option("--max-steps-per-worker", type=click.IntRange(min=1), default=1, show_default=True)
@click.option(
    "--max-parallel",
    type=click.IntRange(min=1),
    default=None,
    help="Most workers running at once [default: one per worktree]",
)
@click.option(
    "--worker-timeout-seconds",
    type=click.FloatRange(min=0.0, min_open=True),
    default=None,
    help="Deadline of each worker process; its process group is killed after it [default: none]",
)
@click.option("--continue-on-failure", is_flag=True, help="Keep going after a failed worker")
@json_option
@pass_app
def harness_loop_coordinator(app: AppContext, /, **options: Any) -> Reply:
    """Run one worker process per worktree, in parallel, round after round.

    \b
    premath harness-loop coordinator --worktree ../w1 --worktree ../w2 \\
        --rounds 10 --max-steps-per-worker 5 --work-cmd 'make fix' --verify-cmd 'make test'
    """
    from premath.harness.coordinator import build_coordinator_config, run_coordinator
    from premath.harness.loop_config import WORKTREES_ENV

    cfg = build_coordinator_config(options, env_worktrees=os.environ.get(WORKTREES_ENV))
    outcome = run_coordinator(cfg, now=app.clock.now, report=report_progress)
    return Reply(outcome.to_document(), text=coordinator_text, exit_code=outcome.exit_code)
