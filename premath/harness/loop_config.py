"""What a worker needs to run steps: resolved paths, commands, limits and its authority.

One frozen object per worker, built once by the CLI (or a test), so the step code never joins
paths or reads the environment itself. specs/harness-loop.md "Options".
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

from premath.errors import InvalidUsage
from premath.harness.authority import IssueAuthority, LocalAuthority
from premath.harness.lane import MutationAuthority, resolve_mutation_authority
from premath.harness.loop_paths import (
    DEFAULT_LEDGER_PATH,
    DEFAULT_SESSION_PATH,
    DEFAULT_TRAJECTORY_PATH,
    LoopPaths,
)
from premath.models.retry_policy import RetryPolicy
from premath.models.vocabulary import DEFAULT_ISSUES_PATH
from premath.runner.process import passed_env

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.harness.delivery import GitDelivery

DEFAULT_WORK_CMD = "true"
DEFAULT_VERIFY_CMD = "mise run ci-check"
DEFAULT_WITNESS_PREFIX = "worker://loop"
DEFAULT_COMMAND_TIMEOUT_S = 1800.0
DEFAULT_OUTPUT_CAP = 8 * 1024 * 1024
DEFAULT_PROGRAM_MAX_CALLS = 32
WORK_CMD_ENV = "PREMATH_WORK_CMD"
VERIFY_CMD_ENV = "PREMATH_VERIFY_CMD"
WITNESS_PREFIX_ENV = "PREMATH_WITNESS_REF_PREFIX"
WORKER_ID_ENV = "PREMATH_WORKER_ID"
WORKTREES_ENV = "PREMATH_WORKTREES"


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    """What every worker of one loop shares, checked when built: a refused value is a usage
    error (exit 2) before any step or worker process starts. Environment fallbacks
    (`PREMATH_WORK_CMD`, ...) are resolved here, so a coordinator hands its workers final values.
    """

    paths: LoopPaths
    work_cmd: str | None = None
    work_program: str | None = None
    """A host-action program run as the work step instead of a command (harness/work.py)."""
    work_program_max_calls: int = DEFAULT_PROGRAM_MAX_CALLS
    verify_cmd: str | None = None
    """None: each issue's own `Verification:` commands, else `DEFAULT_VERIFY_CMD`."""
    verify_witness: str | None = None
    """A witness file the verify command writes (relative to the worktree), classified too."""
    witness_prefix: str | None = None
    mutation_mode: str = ""
    override_reason: str = ""
    policy_path: str | None = None
    lease_ttl_s: int = 3600
    command_timeout_s: float = DEFAULT_COMMAND_TIMEOUT_S
    output_cap: int = DEFAULT_OUTPUT_CAP
    backoff_scale: float = 1.0
    pass_env: tuple[str, ...] = ()
    host_action_transport: str | None = None
    """`mcp`: lease recovery after a failure goes through the transport dispatch (D5-12)."""
    authority: MutationAuthority = field(init=False)
    policy: RetryPolicy = field(init=False)
    program: Any = field(init=False)
    """The loaded `ProgramWork` of `work_program` (None without one)."""

    def __post_init__(self) -> None:
        from premath.harness.retry import load_retry_policy
        from premath.issues.leases import MAX_TTL_SECONDS, MIN_TTL_SECONDS

        if not MIN_TTL_SECONDS <= self.lease_ttl_s <= MAX_TTL_SECONDS:
            raise InvalidUsage(
                f"--lease-ttl-seconds must be in range [{MIN_TTL_SECONDS}, {MAX_TTL_SECONDS}] "
                f"(got {self.lease_ttl_s})"
            )
        if self.command_timeout_s <= 0:
            raise InvalidUsage("--command-timeout-seconds must be > 0")
        passed_env(self.pass_env)  # refuses PREMATH_* names now, not at the first step
        policy_path = os.path.abspath(self.policy_path) if self.policy_path else None
        program = self._program()
        resolved: dict[str, Any] = {
            "work_cmd": None
            if program is not None
            else env_or(self.work_cmd, WORK_CMD_ENV, DEFAULT_WORK_CMD),
            "work_program": None if program is None else program.path,
            "program": program,
            "verify_cmd": self.verify_cmd or os.environ.get(VERIFY_CMD_ENV) or None,
            "verify_witness": self.verify_witness or None,
            "witness_prefix": env_or(
                self.witness_prefix, WITNESS_PREFIX_ENV, DEFAULT_WITNESS_PREFIX
            ),
            "policy_path": policy_path,
            "pass_env": tuple(self.pass_env),
            "authority": resolve_mutation_authority(self.mutation_mode, self.override_reason),
            "policy": load_retry_policy(policy_path),
        }
        for name, value in resolved.items():
            object.__setattr__(self, name, value)

    def _program(self) -> Any:
        """The work program, loaded and checked now: a bad one is refused before any claim."""
        if self.work_program is None:
            return None
        if self.work_cmd is not None:
            raise InvalidUsage("give --work-cmd or --work-program, not both")
        if self.work_program_max_calls < 1:
            raise InvalidUsage("--work-program-max-calls must be >= 1")
        from premath.harness.work import load_work_program

        return load_work_program(
            os.path.abspath(self.work_program),
            repo_root=self.paths.repo_root,
            max_calls=self.work_program_max_calls,
        )

    def for_worker(self, worker_id: str) -> WorkerSettings:
        """The same settings with this worker's own session and ledger (D5-11)."""
        return replace(self, paths=self.paths.for_worker(worker_id))


@dataclass(frozen=True, slots=True)
class WorkerPlace:
    """Where a worker's step runs (its worktree) and what it records into (the loop's paths)."""

    worktree: str
    """Absolute: the work and verify commands' working folder."""
    paths: LoopPaths


@dataclass(frozen=True, slots=True)
class WorkerAuthority:
    """Whom a worker answers to: the issue memory it claims and closes through, what it may
    mutate, the retry policy it escalates by, and where its work and presence are reported."""

    memory: IssueAuthority
    """Issue memory's authority: the issues file (`LocalAuthority`) or an MCP server."""
    mutation: MutationAuthority
    policy: RetryPolicy
    delivery: GitDelivery | None = None
    """A remote worker's clone: each success is pushed to `premath/<issue>` before the close."""
    presence: Any = None
    """A remote worker's `Presence` at the authority (harness/presence.py); None: nobody's."""
    host_action_transport: str | None = None
    """`mcp`: lease recovery after a failure goes through the transport dispatch (D5-12)."""


@dataclass(frozen=True, slots=True)
class StepCommands:
    """What a worker's step runs: its work, its verification, the environment they get, and
    the prefix naming the step's outcome in the records."""

    work_cmd: str | None = None
    """None: the agent did the work itself (`harness complete`), or `work_program` does it."""
    work_program: Any = None
    """The loaded `ProgramWork` (harness/work.py) run instead of `work_cmd`."""
    verify_cmd: str | None = None
    """None: each issue's own `Verification:` commands, else `DEFAULT_VERIFY_CMD`."""
    verify_witness: str | None = None
    """A witness file the verify command writes (relative to the worktree), classified too."""
    pass_env: tuple[str, ...] = ()
    """Names passed on to the commands beyond the allowlist (`--pass-env`)."""
    witness_prefix: str = DEFAULT_WITNESS_PREFIX
    """The step's outcome witness is `<prefix>/<worker>/<issue>/completed|failed`."""

    @property
    def work(self) -> Any:
        """The step's `WorkStep`: the program, else the command, else None (agent did it)."""
        from premath.harness.work import ShellWork

        if self.work_program is not None:
            return self.work_program
        return None if self.work_cmd is None else ShellWork(self.work_cmd)


@dataclass(frozen=True, slots=True)
class StepLimits:
    """How long and how much a worker's step may take: its lease, commands, output, retries'
    backoff and lock waits."""

    lease_ttl_s: int = 3600
    command_timeout_s: float = DEFAULT_COMMAND_TIMEOUT_S
    output_cap: int = DEFAULT_OUTPUT_CAP
    backoff_scale: float = 1.0
    """Multiplies the retry policy's backoff delays (tests and demos shrink them)."""
    lock_timeout_s: float = 10.0

    @property
    def renew_every_s(self) -> float:
        """The lease heartbeat's period and a renewal's patience: a third of the TTL."""
        return self.lease_ttl_s / 3


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    """One worker: its id and its settings grouped by concern, so each step function names
    the concern it depends on (`verify_command` takes the commands, `step_dir` the paths)."""

    worker_id: str
    where: WorkerPlace
    authority: WorkerAuthority
    commands: StepCommands
    limits: StepLimits

    @property
    def verify_witness_path(self) -> str | None:
        """The verify command's witness file in this worker's worktree (None: none asked for)."""
        witness = self.commands.verify_witness
        return None if witness is None else os.path.join(self.where.worktree, witness)


def env_or(value: str | None, env_name: str, default: str) -> str:
    """An option's value, else its environment fallback, else the reference's default."""
    if value is not None:
        return value
    return os.environ.get(env_name) or default


def checked_worker_id(worker_id: str) -> str:
    """A worker id names files (`harness_session.<id>.json`): non-empty, no path separators."""
    cleaned = worker_id.strip()
    if not cleaned:
        raise InvalidUsage(f"--worker-id is required (or set {WORKER_ID_ENV})")
    if any(ch in cleaned for ch in "/\\") or cleaned in (".", ".."):
        raise InvalidUsage(f"--worker-id must not contain path separators (got {worker_id!r})")
    return cleaned


def worker_config(
    settings: WorkerSettings,
    *,
    worker_id: str,
    worktree: str = ".",
    lock_timeout_s: float = 10.0,
    agent_did_work: bool = False,
    memory: IssueAuthority | None = None,
    delivery: GitDelivery | None = None,
    paths: LoopPaths | None = None,
    presence: Any = None,
) -> WorkerConfig:
    """One worker's config from the loop's settings: its id and worktree checked (exit 2).
    Without `memory` the loop's authority is the issues file (`LocalAuthority`); `paths`
    replace the settings' (a fleet worker's records live in its home on its node); `presence`
    reports the worker to its remote authority (harness/presence.py)."""
    cleaned = checked_worker_id(worker_id)
    worktree_abs = os.path.abspath(worktree)
    if not os.path.isdir(worktree_abs):
        raise InvalidUsage(f"worktree is not a directory: {worktree_abs}")
    assert settings.witness_prefix is not None  # resolved when the settings were built
    where = WorkerPlace(worktree_abs, paths or settings.paths)
    return WorkerConfig(
        worker_id=cleaned,
        where=where,
        authority=WorkerAuthority(
            memory=memory or LocalAuthority(where.paths.issues, lock_timeout_s),
            mutation=settings.authority,
            policy=settings.policy,
            delivery=delivery,
            presence=presence,
            host_action_transport=settings.host_action_transport,
        ),
        commands=StepCommands(
            work_cmd=None if agent_did_work else settings.work_cmd,
            work_program=None if agent_did_work else settings.program,
            verify_cmd=settings.verify_cmd,
            verify_witness=settings.verify_witness,
            pass_env=settings.pass_env,
            witness_prefix=settings.witness_prefix,
        ),
        limits=StepLimits(
            lease_ttl_s=settings.lease_ttl_s,
            command_timeout_s=settings.command_timeout_s,
            output_cap=settings.output_cap,
            backoff_scale=settings.backoff_scale,
            lock_timeout_s=lock_timeout_s,
        ),
    )


def make_worker_config(
    *,
    worker_id: str,
    repo_root: str = ".",
    worktree: str = ".",
    issues_path: str = DEFAULT_ISSUES_PATH,
    session_path: str = DEFAULT_SESSION_PATH,
    ledger_path: str = DEFAULT_LEDGER_PATH,
    trajectory_path: str = DEFAULT_TRAJECTORY_PATH,
    lock_timeout_s: float = 10.0,
    agent_did_work: bool = False,
    memory: IssueAuthority | None = None,
    delivery: GitDelivery | None = None,
    **settings: Any,
) -> WorkerConfig:
    """A worker config from plain keywords (library callers and tests); `settings` are
    `WorkerSettings` fields; `memory` and `delivery` as `worker_config` takes them."""
    paths = LoopPaths.resolve(
        repo_root,
        issues=issues_path,
        session=session_path,
        ledger=ledger_path,
        trajectory=trajectory_path,
    )
    return worker_config(
        WorkerSettings(paths=paths, **settings),
        worker_id=worker_id,
        worktree=worktree,
        lock_timeout_s=lock_timeout_s,
        agent_did_work=agent_did_work,
        memory=memory,
        delivery=delivery,
    )
