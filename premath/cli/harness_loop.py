"""`premath harness-loop worker|coordinator`: the gated multithread loop over issue memory.

The loop's options are one table (`MEMORY_PATH_FLAGS`, `SETTINGS_FLAGS`): each row names the
library field it fills, so click hands us the fields by name, `loop_settings` builds the typed
`WorkerSettings`, and `worker_command` spells the same settings back as a worker's command line.
No module below `cli/` knows a flag.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from premath.cli._options import FloatRange, IntRange, json_option
from premath.cli._remote import authority_options, delivery_options
from premath.cli._root import AppContext, Reply, StrictGroup, pass_app
from premath.errors import InvalidUsage

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class Flag:
    """One option: the library field it fills, its spellings (the reference's first), click's
    keywords."""

    field: str
    spellings: tuple[str, ...]
    settings: dict[str, Any]

    def option(self) -> Callable[[F], F]:
        return click.option(*self.spellings, self.field, **self.settings)

    def argv(self, value: Any) -> list[str]:
        """The value spelled back as arguments ([] for unset)."""
        if value is None or value == "":
            return []
        if isinstance(value, tuple):
            return [part for item in value for part in (self.spellings[0], str(item))]
        return [self.spellings[0], str(value)]


MEMORY_PATH_FLAGS = (
    Flag(
        "repo_root",
        ("--repo-root",),
        {
            "default": None,
            "help": "Base for relative memory paths [default: the nearest folder above holding "
            ".premath/, else the working folder]",
        },
    ),
    Flag(
        "issues",
        ("--issues-path", "--issues"),
        {"default": ".premath/issues.jsonl", "show_default": True, "help": "Issue memory"},
    ),
    Flag(
        "session",
        ("--session-path",),
        {
            "default": ".premath/harness_session.json",
            "show_default": True,
            "help": "Session handoff",
        },
    ),
    Flag(
        "ledger",
        ("--feature-ledger-path",),
        {
            "default": ".premath/harness_feature_ledger.json",
            "show_default": True,
            "help": "Feature ledger",
        },
    ),
    Flag(
        "trajectory",
        ("--trajectory-path",),
        {
            "default": ".premath/harness_trajectory.jsonl",
            "show_default": True,
            "help": "Append-only step trajectory",
        },
    ),
)

SETTINGS_FLAGS = (
    Flag(
        "lease_ttl_s",
        ("--lease-ttl-seconds",),
        {
            "type": int,
            "default": 3600,
            "show_default": True,
            "help": "Lease TTL of each claim in seconds, 30..86400 (renewed while the work runs)",
        },
    ),
    Flag(
        "work_cmd",
        ("--work-cmd",),
        {"help": "Shell command for the work [env PREMATH_WORK_CMD, else true]"},
    ),
    Flag(
        "work_program",
        ("--work-program",),
        {
            "help": "Host-action program (scheme-eval JSON) run as the work instead of a command; "
            "its host calls are the only effects, the claimed issue is each call's issueId",
        },
    ),
    Flag(
        "work_program_max_calls",
        ("--work-program-max-calls",),
        {
            "type": click.IntRange(min=1),
            "default": 32,
            "show_default": True,
            "help": "Most host calls the work program may make (checked before any claim)",
        },
    ),
    Flag(
        "verify_cmd",
        ("--verify-cmd",),
        {
            "help": "Shell command that verifies the work [env PREMATH_VERIFY_CMD, else the "
            "issue's own Verification: commands, else mise run ci-check]"
        },
    ),
    Flag(
        "verify_witness",
        ("--verify-witness",),
        {
            "help": "Witness JSON the verify command writes (relative to the worktree); its "
            "failure classes count as the verify's"
        },
    ),
    Flag(
        "witness_prefix",
        ("--witness-ref-prefix",),
        {"help": "Step witness prefix [env PREMATH_WITNESS_REF_PREFIX, else worker://loop]"},
    ),
    Flag(
        "mutation_mode",
        ("--mutation-mode",),
        {
            "default": "",
            "help": "instruction-linked (default) or human-override (needs --override-reason)",
        },
    ),
    Flag(
        "override_reason",
        ("--override-reason",),
        {"default": "", "help": "Why a human override is in force"},
    ),
    Flag("policy_path", ("--policy",), {"default": None, "help": "Retry policy path"}),
    Flag(
        "command_timeout_s",
        ("--command-timeout-seconds", "--timeout"),
        {
            "type": float,
            "default": 1800.0,
            "show_default": True,
            "help": "Deadline of each work/verify command in seconds; its process group is "
            "killed after it",
        },
    ),
    Flag(
        "output_cap",
        ("--output-cap-bytes", "--output-cap"),
        {
            "type": IntRange(min=1),
            "default": 8 * 1024 * 1024,
            "show_default": True,
            "help": "Largest output kept per command stream; more fails the step's gate",
        },
    ),
    Flag(
        "backoff_scale",
        ("--backoff-scale",),
        {
            "type": FloatRange(min=0.0),
            "default": 1.0,
            "show_default": True,
            "help": "Multiplier of the retry policy's backoff delays (0 disables waiting)",
        },
    ),
    Flag(
        "host_action_transport",
        ("--host-action-transport",),
        {
            "type": click.Choice(["mcp", "local-repl"]),
            "default": None,
            "help": "mcp: after a failure, give the lease back through the transport (as MCP "
            "tools do) and record transport:// refs; unset: directly",
        },
    ),
    Flag(
        "pass_env",
        ("--pass-env",),
        {
            "multiple": True,
            "help": "Environment variable to pass to work/verify commands (repeatable)",
        },
    ),
)


def _decorate(function: F, flags: tuple[Flag, ...]) -> F:
    for flag in reversed(flags):
        function = flag.option()(function)
    return function


def report_progress(line: str) -> None:
    """Live progress for people watching a terminal; stdout stays one document."""
    click.echo(line, err=True)


def memory_path_options(function: F) -> F:
    """Where issue memory, session, ledger and trajectory live (relative to `--repo-root`)."""
    return _decorate(function, MEMORY_PATH_FLAGS)


def loop_options(function: F) -> F:
    """The options both modes share (specs/harness-loop.md "Worker"), then ours."""
    return memory_path_options(_decorate(function, SETTINGS_FLAGS))


def loop_paths(options: dict[str, Any]) -> Any:
    """`LoopPaths` from the memory-path options (consumed from `options`)."""
    from premath.harness.loop_paths import LoopPaths
    from premath.store.root import discover_root

    root = options.pop("repo_root")
    return LoopPaths.resolve(
        discover_root() if root is None else root,
        issues=options.pop("issues"),
        session=options.pop("session"),
        ledger=options.pop("ledger"),
        trajectory=options.pop("trajectory"),
    )


def loop_settings(options: dict[str, Any]) -> Any:
    """The typed, checked `WorkerSettings` from the loop options (consumed from `options`)."""
    from premath.harness.loop_config import WorkerSettings

    paths = loop_paths(options)
    return WorkerSettings(
        paths=paths, **{flag.field: options.pop(flag.field) for flag in SETTINGS_FLAGS}
    )


def worker_command(spec: Any) -> list[str]:
    """A coordinator's worker process: the same settings, spelled by the same table."""
    settings = spec.settings
    argv = [sys.executable, "-m", "premath", "harness-loop", "worker"]
    for flag in MEMORY_PATH_FLAGS:
        argv += flag.argv(getattr(settings.paths, flag.field))
    for flag in SETTINGS_FLAGS:
        argv += flag.argv(getattr(settings, flag.field))
    argv += ["--worktree-root", spec.worktree, "--worker-id", spec.worker_id]
    argv += ["--max-steps", str(spec.max_steps)]
    if spec.continue_on_failure:
        argv.append("--continue-on-failure")
    return [*argv, "--json"]


def verbose_worker_command(spec: Any) -> list[str]:
    """`worker_command`, with `--verbose` (the coordinator's `-v` reaches its workers)."""
    return [*worker_command(spec), "--verbose"]


def delivering(command: Callable[[Any], list[str]], choice: Any) -> Callable[[Any], list[str]]:
    """`command` for workers that deliver to `--repo` through the merge queue, each keeping
    its clone in its worktree (specs/remote-workers.md "Merge queue")."""
    return lambda spec: [*command(spec), *choice.argv()]


verbose_option = click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help="Also show the mutation policy each worker runs under (shown anyway when it is a "
    "human override)",
)


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
    """Run worker and coordinator loops over issues.

    A worker takes ready issues to closed, one at a time; see specs/harness-loop.md.
    """


def worker_identity_options(function: F) -> F:
    """Which worker this is and where its commands run."""
    function = click.option(
        "--worker-id",
        envvar="PREMATH_WORKER_ID",
        default="",
        help="Worker id [env PREMATH_WORKER_ID]",
    )(function)
    return click.option(
        "--worktree-root", default=".", show_default=True, help="Working folder of work/verify"
    )(function)


def one_worker(
    app: AppContext,
    options: dict[str, Any],
    *,
    agent_did_work: bool = False,
    memory: Any = None,
    delivery: Any = None,
    presence: Any = None,
) -> Any:
    """The `WorkerConfig` of a single-worker command (consumes the loop and identity options);
    `memory` is its issue authority when not the issues file (`--mcp-url`), `presence` its
    reports there."""
    from premath.harness.loop_config import worker_config

    return worker_config(
        loop_settings(options),
        worker_id=options.pop("worker_id"),
        worktree=options.pop("worktree_root"),
        lock_timeout_s=app.lock_timeout(),
        agent_did_work=agent_did_work,
        memory=memory,
        delivery=delivery,
        presence=presence,
    )


@contextmanager
def remote_authority(options: dict[str, Any], caller: str) -> Iterator[Any]:
    """The connected MCP authority of `--mcp-url` (its token line named `caller`, else the
    first), or None for the issues file; consumes the authority options."""
    from premath.cli._remote import pop_remote

    remote = pop_remote(options)
    if remote is None:
        yield None
        return
    with remote.authority(remote.token_for(caller), report_progress) as memory:
        yield memory


@contextmanager
def worker_authority(
    options: dict[str, Any], *, delivers: bool = False
) -> Iterator[tuple[Any, Any, Any]]:
    """(issue authority, git delivery, presence) of a single-worker command: all None for the
    issues file, else the connected MCP authority and the worker's presence there; with
    `--repo`, the prepared clone. A remote worker's home (`--checkout-dir/<worker id>`) becomes
    its repository root; a worker on the issues file keeps its clone in `--worktree-root`
    (specs/remote-workers.md "Merge queue")."""
    from premath.cli._remote import pop_delivery, pop_remote
    from premath.harness.loop_config import WORKER_ID_ENV, checked_worker_id

    remote = pop_remote(options)
    choice = pop_delivery(options) if delivers else None
    if remote is None and choice is None:
        yield None, None, None
        return
    worker_id = checked_worker_id(options["worker_id"] or os.environ.get(WORKER_ID_ENV, ""))
    home = None if choice is None else delivery_home(choice, options, worker_id, remote is not None)
    opened = (
        nullcontext()
        if remote is None
        else remote.authority(remote.token_for(worker_id), report_progress)
    )
    with opened as memory:
        delivery = None
        if choice is not None and home is not None:
            delivery = choice.prepare(home, worker_id, report_progress)
            options["worktree_root"] = delivery.worktree
        presence = None
        if remote is not None:
            presence = remote.presence(memory, worker_id, "", report_progress)
        yield memory, delivery, presence


def delivery_home(choice: Any, options: dict[str, Any], worker_id: str, remote: bool) -> str:
    """The folder of a delivering worker's clone (`repo/`) and merge checkout (`integration/`):
    a remote worker's home under `--checkout-dir`, which also holds its records; a worker on the
    issues file, its `--worktree-root`, its records staying with the issues file."""
    if remote:
        if options["repo_root"] is not None or options["worktree_root"] != ".":
            raise InvalidUsage(
                "--repo works in the worker's own clone: leave out --repo-root and "
                "--worktree-root (use --checkout-dir to choose where clones live)"
            )
        home: str = choice.home(worker_id)
        options["repo_root"] = home
        return home
    if choice.checkout_dir is not None or options["worktree_root"] == ".":
        raise InvalidUsage(
            "--repo on the issues file needs --worktree-root FOLDER, the worker's own folder: "
            "its clone of --repo goes in FOLDER/repo, the merge queue's checkout in "
            "FOLDER/integration (--checkout-dir is for workers with --mcp-url)"
        )
    return os.path.abspath(str(options["worktree_root"]))


@harness_loop.command("worker")
@loop_options
@worker_identity_options
@click.option(
    "--max-steps",
    type=IntRange(min=1),
    default=1,
    show_default=True,
    help="Most steps before the worker stops",
)
@click.option("--continue-on-failure", is_flag=True, help="Keep claiming after a failed step")
@authority_options
@delivery_options
@click.option(
    "--drain",
    is_flag=True,
    help="Keep claiming until no issue is ready or held by another worker (wait for leases "
    "that may go stale)",
)
@verbose_option
@json_option
@pass_app
def harness_loop_worker(app: AppContext, /, **options: Any) -> Reply:
    """Claim, work, verify and close issues one at a time. Each issue is held under a lease.

    \b
    premath harness-loop worker --worker-id w1 --max-steps 5 \\
        --work-cmd 'make fix' --verify-cmd 'make test' --json
    premath harness-loop worker --worker-id w1 --drain \\
        --mcp-url http://host:8765/mcp --token-file tokens \\
        --instruction-id fleet --repo git@host:app.git
    """
    from premath.harness.lane import DEFAULT_MODE
    from premath.harness.worker import run_worker

    max_steps = options.pop("max_steps")
    continue_on_failure = options.pop("continue_on_failure")
    verbose = options.pop("verbose")
    drain = options.pop("drain")
    with worker_authority(options, delivers=True) as (memory, delivery, presence):
        cfg = one_worker(app, options, memory=memory, delivery=delivery, presence=presence)
        mutation = cfg.authority.mutation
        if verbose or mutation.mode != DEFAULT_MODE:  # an override changes what may mutate
            report_progress(f"[worker:{cfg.worker_id}] override policy {mutation.describe()}")
        outcome = run_worker(
            cfg,
            max_steps=max_steps,
            continue_on_failure=continue_on_failure,
            clock=app.clock,
            report=report_progress,
            drain_poll_s=drain_poll_seconds(cfg.limits.lease_ttl_s) if drain else None,
        )
    return Reply(outcome.to_document(), text=worker_text, exit_code=outcome.exit_code)


def drain_poll_seconds(lease_ttl_s: int) -> float:
    """How often a draining worker looks again while others hold leases: a tenth of the TTL,
    between 0.5 and 5 s (a dead worker's issue is back within about a TTL either way)."""
    return min(5.0, max(0.5, lease_ttl_s / 10))


def heartbeat_seconds() -> float | None:
    """On a terminal, report quiet workers alive this often; piped output stays line-only."""
    if not sys.stderr.isatty():
        return None
    return float(os.environ.get("PREMATH_PROGRESS_SECONDS") or 10.0)


@harness_loop.command("coordinator")
@loop_options
@click.option(
    "--worktree",
    "worktrees",
    multiple=True,
    help="Worker worktree (repeatable) [env PREMATH_WORKTREES]",
)
@click.option("--rounds", type=IntRange(min=1), default=1, show_default=True, help="Most rounds")
@click.option(
    "--worker-prefix",
    default="worker",
    show_default=True,
    help="Worker ids are <prefix>.1, <prefix>.2 and so on",
)
@click.option(
    "--max-steps-per-worker",
    type=IntRange(min=1),
    default=1,
    show_default=True,
    help="Most steps of each worker per round",
)
@click.option(
    "--max-parallel",
    type=IntRange(min=1),
    default=None,
    help="Most workers running at once [default: one per worktree]",
)
@click.option(
    "--worker-timeout-seconds",
    type=FloatRange(min=0.0, min_open=True),
    default=None,
    help="Deadline of each worker process; its process group is killed after it [default: none]",
)
@click.option("--continue-on-failure", is_flag=True, help="Keep going after a failed worker")
@click.option(
    "--executor",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="local: worker processes over worktrees here; ray: workers placed on a Ray cluster, "
    "claiming through --mcp-url and delivering to --repo",
)
@authority_options
@delivery_options
@click.option(
    "--concurrency",
    type=IntRange(min=1),
    default=1,
    show_default=True,
    help="Workers on the cluster (--executor ray)",
)
@click.option(
    "--worker-cpus",
    type=FloatRange(min=0.0, min_open=True),
    default=1.0,
    show_default=True,
    help="CPUs Ray reserves for each worker (--executor ray)",
)
@click.option(
    "--worker-memory-mb",
    type=IntRange(min=1),
    default=None,
    help="Memory Ray reserves for each worker, in MB (--executor ray)",
)
@click.option(
    "--ray-address",
    envvar="RAY_ADDRESS",
    default=None,
    help="Ray cluster, e.g. 10.0.0.5:6379 [env RAY_ADDRESS, else a local Ray instance]",
)
@verbose_option
@json_option
@pass_app
def harness_loop_coordinator(app: AppContext, /, **options: Any) -> Reply:
    """Run one worker per worktree, in parallel, round after round.

    Ctrl-C or SIGTERM stops every worker at once, gives their leases back and prints the report.
    With --repo each worker clones it into its worktree (FOLDER/repo) and closes an issue only
    once its branch has landed through the merge queue, as a fleet's workers do.
    With --executor ray the workers run on a Ray cluster, claim through the MCP server, push
    each verified issue to its branch premath/<issue id> of --repo and land it through the
    merge queue on the integration branch before closing it.

    \b
    premath harness-loop coordinator --worktree ../w1 --worktree ../w2 \\
        --rounds 10 --max-steps-per-worker 5 \\
        --work-cmd 'make fix' --verify-cmd 'make test'
    premath harness-loop coordinator --executor ray \\
        --mcp-url http://host:8765/mcp --token-file tokens \\
        --instruction-id fleet --repo git@host:app.git --concurrency 8
    """
    from premath.cli._remote import pop_delivery
    from premath.harness.coordinator import CoordinatorConfig, resolve_worktrees, run_coordinator
    from premath.harness.loop_config import WORKTREES_ENV

    if options.pop("executor") == "ray":
        return ray_coordinator(app, options)
    refuse_given("only with --executor ray", FLEET_ONLY)
    for name in FLEET_ONLY:
        options.pop(name)
    choice = pop_delivery(options)
    command = verbose_worker_command if options["verbose"] else worker_command
    cfg = CoordinatorConfig(
        settings=loop_settings(options),
        worktrees=resolve_worktrees(options["worktrees"], os.environ.get(WORKTREES_ENV)),
        worker_command=command if choice is None else delivering(command, choice),
        rounds=options["rounds"],
        worker_prefix=options["worker_prefix"],
        max_steps_per_worker=options["max_steps_per_worker"],
        max_parallel=options["max_parallel"],
        continue_on_failure=options["continue_on_failure"],
        worker_timeout_s=options["worker_timeout_seconds"],
        heartbeat_s=heartbeat_seconds(),
    )
    outcome = run_coordinator(
        cfg, now=app.clock.now, report=report_progress, lock_timeout_s=app.lock_timeout()
    )
    return Reply(outcome.to_document(), text=coordinator_text, exit_code=outcome.exit_code)


FLEET_ONLY = (
    "mcp_url",
    "token_file",
    "instruction_id",
    "mcp_retry_seconds",
    "checkout_dir",
    "concurrency",
    "worker_cpus",
    "worker_memory_mb",
    "ray_address",
)
LOCAL_ONLY = {
    "worktrees": "leave it out, each worker clones --repo on its node (--checkout-dir says where)",
    "rounds": "leave it out, the workers claim until nothing is ready or held (bound each one "
    "with --max-steps-per-worker)",
    "max_parallel": "use --concurrency, the number of workers on the cluster",
    "worker_timeout_seconds": "leave it out, Ctrl-C stops the fleet and a lost worker's issue "
    "is claimed again once its lease is stale",
}
"""The local executor's options, each with what to do instead under Ray (issue 35)."""


def given_options(names: Sequence[str]) -> list[tuple[str, str]]:
    """(flag, name) of the options among `names` given on the command line."""
    from click.core import ParameterSource

    ctx = click.get_current_context()
    return [
        (param.opts[0], str(param.name))
        for param in ctx.command.params
        if param.name in names
        and ctx.get_parameter_source(param.name) is ParameterSource.COMMANDLINE
    ]


def refuse_given(why: str, names: tuple[str, ...]) -> None:
    """A usage error naming the options among `names` given on the command line."""
    given = given_options(names)
    if given:
        raise InvalidUsage(f"{', '.join(flag for flag, _ in given)}: {why}")


def refuse_local_options() -> None:
    """The local executor's options under Ray: a usage error saying what to do for each."""
    given = given_options(tuple(LOCAL_ONLY))
    if given:
        raise InvalidUsage(
            f"{', '.join(flag for flag, _ in given)}: not with --executor ray (its workers work "
            "in their own clones): "
            + "; ".join(f"{flag}: {LOCAL_ONLY[name]}" for flag, name in given)
        )


def ray_coordinator(app: AppContext, options: dict[str, Any]) -> Reply:
    """`--executor ray`: the fleet on the cluster (premath/harness/fleet.py)."""
    from click.core import ParameterSource

    from premath.cli._remote import pop_delivery, pop_remote

    refuse_local_options()
    ctx = click.get_current_context()
    remote, choice = pop_remote(options), pop_delivery(options)
    if remote is None or choice is None:
        raise InvalidUsage(
            "--executor ray needs --mcp-url (the authority every worker claims through) and "
            "--repo (what each worker clones and pushes its branches to)"
        )
    explicit = ctx.get_parameter_source("worker_prefix") is ParameterSource.COMMANDLINE
    steps = ctx.get_parameter_source("max_steps_per_worker") is ParameterSource.COMMANDLINE
    settings = loop_settings(options)
    cfg = fleet_config(
        settings, remote, choice, options, explicit_prefix=explicit, explicit_steps=steps
    )
    from premath.harness.fleet import run_fleet

    with remote.authority(remote.token_for("coordinator"), report_progress) as authority:
        outcome = run_fleet(cfg, authority, now=app.clock.now, report=report_progress)
    return Reply(outcome.to_document(), text=fleet_text, exit_code=outcome.exit_code)


def fleet_config(
    settings: Any,
    remote: Any,
    choice: Any,
    options: dict[str, Any],
    *,
    explicit_prefix: bool,
    explicit_steps: bool,
) -> Any:
    """The fleet's `FleetConfig` from the coordinator's options (loads ray: only for
    `--executor ray`, which names the extra to install when it is missing)."""
    import secrets

    from premath.cli._remote import FleetOpener
    from premath.harness.fleet import FleetConfig

    prefix = options["worker_prefix"].strip()
    if not prefix or "/" in prefix:
        raise InvalidUsage("--worker-prefix must be non-empty and contain no '/'")
    return FleetConfig(
        settings=settings,
        open_worker=FleetOpener(remote, choice, tuple(remote.tokens())),
        concurrency=options["concurrency"],
        worker_prefix=prefix if explicit_prefix else f"{prefix}-{secrets.token_hex(3)}",
        worker_cpus=options["worker_cpus"],
        worker_memory_mb=options["worker_memory_mb"],
        max_steps_per_worker=options["max_steps_per_worker"] if explicit_steps else 1_000_000,
        continue_on_failure=options["continue_on_failure"],
        drain_poll_s=drain_poll_seconds(settings.lease_ttl_s),
        ray_address=options["ray_address"],
        pass_env={name: os.environ[name] for name in settings.pass_env if name in os.environ},
    )


def fleet_text(document: dict[str, Any]) -> str:
    return (
        f"[coordinator] executor=ray workers={document['workerCount']} "
        f"closed={document['closedCount']} failed={document['failedCount']} "
        f"stopped={document['stoppedReason']}"
    )


STATUS_PATH_FLAGS = tuple(f for f in MEMORY_PATH_FLAGS if f.field not in ("session", "ledger"))
"""Where `harness-loop status` finds the registry (beside the issues file) and trajectory."""


def status_path_options(function: F) -> F:
    return _decorate(function, STATUS_PATH_FLAGS)


@harness_loop.command("status")
@status_path_options
@authority_options
@json_option
@pass_app
def harness_loop_status(app: AppContext, /, **options: Any) -> Reply:
    """Show the fleet's workers and which of them need a person.

    Each worker with its node, phase, issue, attempt, last heartbeat, steps, closes and pass
    rate, from this project's worker registry or the authority at --mcp-url.

    \b
    premath harness-loop status
    premath harness-loop status --json \\
        --mcp-url http://host:8765/mcp --token-file tokens
    """
    from premath.record.worker_board import status_text, workers_document
    from premath.record.worker_registry import registry_path

    paths = loop_paths({**options, "session": "", "ledger": ""})
    with remote_authority(options, "status") as memory:
        if memory is None:
            now = app.clock.now()
            document = workers_document(registry_path(paths.issues), paths.trajectory, now)
        else:
            from premath.mcp.presence import fleet_workers

            document = fleet_workers(memory)
    return Reply(document, text=status_text)
