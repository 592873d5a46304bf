"""What a worker needs to run steps: resolved paths, commands, limits and its authority.

One frozen object per worker, built once by the CLI (or a test), so the step code never joins
paths or reads the environment itself. specs/harness-loop.md "Options".
"""

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from premath.harness.lane import MutationAuthority
from premath.models.retry_policy import RetryPolicy
from premath.models.vocabulary import DEFAULT_ISSUES_PATH

DEFAULT_SESSION_PATH = ".premath/harness_session.json"
DEFAULT_LEDGER_PATH = ".premath/harness_feature_ledger.json"
DEFAULT_TRAJECTORY_PATH = ".premath/harness_trajectory.jsonl"
DEFAULT_WORK_CMD = "true"
DEFAULT_VERIFY_CMD = "mise run ci-check"
DEFAULT_WITNESS_PREFIX = "worker://loop"
DEFAULT_COMMAND_TIMEOUT_S = 1800.0
DEFAULT_OUTPUT_CAP = 8 * 1024 * 1024
WORK_CMD_ENV = "PREMATH_WORK_CMD"
VERIFY_CMD_ENV = "PREMATH_VERIFY_CMD"
WITNESS_PREFIX_ENV = "PREMATH_WITNESS_REF_PREFIX"
WORKER_ID_ENV = "PREMATH_WORKER_ID"
WORKTREES_ENV = "PREMATH_WORKTREES"


@dataclass(frozen=True, slots=True)
class LoopPaths:
    """Absolute paths of the memory roots (relative ones resolve against `repo_root`)."""

    repo_root: str
    issues: str
    session: str
    ledger: str
    trajectory: str
    steps_dir: str
    """Per-step command logs and step witnesses: `<dir of trajectory>/harness_steps`."""
    join_witness_dir: str

    @classmethod
    def resolve(
        cls,
        repo_root: str = ".",
        *,
        issues: str = DEFAULT_ISSUES_PATH,
        session: str = DEFAULT_SESSION_PATH,
        ledger: str = DEFAULT_LEDGER_PATH,
        trajectory: str = DEFAULT_TRAJECTORY_PATH,
    ) -> "LoopPaths":
        root = os.path.abspath(repo_root)

        def under_root(path: str) -> str:
            return os.path.normpath(os.path.join(root, path))

        trajectory_abs = under_root(trajectory)
        premath_dir = os.path.dirname(trajectory_abs)
        return cls(
            repo_root=root,
            issues=under_root(issues),
            session=under_root(session),
            ledger=under_root(ledger),
            trajectory=trajectory_abs,
            steps_dir=os.path.join(premath_dir, "harness_steps"),
            join_witness_dir=os.path.join(premath_dir, "join-witnesses"),
        )

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> "LoopPaths":
        """From the memory-path options every loop command shares (`--repo-root`, ...)."""
        return cls.resolve(
            options["repo_root"],
            issues=options["issues_path"],
            session=options["session_path"],
            ledger=options["feature_ledger_path"],
            trajectory=options["trajectory_path"],
        )

    def for_worker(self, worker_id: str) -> "LoopPaths":
        """Session and ledger of one worker among many (D5-11: the reference's workers shared
        one session and one ledger and overwrote each other); the trajectory stays shared."""
        return replace(
            self,
            session=per_worker_path(self.session, worker_id),
            ledger=per_worker_path(self.ledger, worker_id),
        )


def per_worker_path(path: str, worker_id: str) -> str:
    """`.premath/harness_session.json` -> `.premath/harness_session.<worker>.json`."""
    target = Path(path)
    return str(target.with_name(f"{target.stem}.{worker_id}{target.suffix}"))


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    worker_id: str
    worktree: str
    paths: LoopPaths
    authority: MutationAuthority
    policy: RetryPolicy
    work_cmd: str | None
    """None: the agent did the work itself (`harness complete`); only verify runs."""
    verify_cmd: str
    verify_witness: str | None = None
    """A witness file the verify command writes (relative to the worktree), classified too."""
    witness_prefix: str = DEFAULT_WITNESS_PREFIX
    lease_ttl_s: int = 3600
    command_timeout_s: float = DEFAULT_COMMAND_TIMEOUT_S
    output_cap: int = DEFAULT_OUTPUT_CAP
    backoff_scale: float = 1.0
    lock_timeout_s: float = 10.0
    pass_env: tuple[str, ...] = ()
    host_action_transport: str | None = None
    """`mcp`: lease recovery after a failure goes through the transport dispatch (D5-12)."""


def env_or(value: str | None, env_name: str, default: str) -> str:
    """An option's value, else its environment fallback, else the reference's default."""
    if value is not None:
        return value
    return os.environ.get(env_name) or default


def make_worker_config(
    *,
    worker_id: str,
    repo_root: str = ".",
    worktree: str = ".",
    issues_path: str = DEFAULT_ISSUES_PATH,
    session_path: str = DEFAULT_SESSION_PATH,
    ledger_path: str = DEFAULT_LEDGER_PATH,
    trajectory_path: str = DEFAULT_TRAJECTORY_PATH,
    work_cmd: str | None = None,
    verify_cmd: str | None = None,
    verify_witness: str | None = None,
    witness_prefix: str | None = None,
    mutation_mode: str | None = None,
    override_reason: str | None = None,
    policy_path: str | None = None,
    lease_ttl_s: int = 3600,
    command_timeout_s: float = DEFAULT_COMMAND_TIMEOUT_S,
    output_cap: int = DEFAULT_OUTPUT_CAP,
    backoff_scale: float = 1.0,
    lock_timeout_s: float = 10.0,
    pass_env: tuple[str, ...] = (),
    agent_did_work: bool = False,
    host_action_transport: str | None = None,
) -> WorkerConfig:
    """Check the options the reference checks before any step (exit 2) and resolve the rest."""
    from premath.errors import InvalidUsage
    from premath.harness.lane import resolve_mutation_authority
    from premath.harness.retry import load_retry_policy
    from premath.issues.leases import MAX_TTL_SECONDS, MIN_TTL_SECONDS

    cleaned = worker_id.strip()
    if not cleaned:
        raise InvalidUsage(f"--worker-id is required (or set {WORKER_ID_ENV})")
    if any(ch in cleaned for ch in "/\\") or cleaned in (".", ".."):
        raise InvalidUsage(f"--worker-id must not contain path separators (got {worker_id!r})")
    if not MIN_TTL_SECONDS <= lease_ttl_s <= MAX_TTL_SECONDS:
        raise InvalidUsage(
            f"--lease-ttl-seconds must be in range [{MIN_TTL_SECONDS}, {MAX_TTL_SECONDS}] "
            f"(got {lease_ttl_s})"
        )
    if command_timeout_s <= 0:
        raise InvalidUsage("--command-timeout-seconds must be > 0")
    worktree_abs = os.path.abspath(worktree)
    if not os.path.isdir(worktree_abs):
        raise InvalidUsage(f"worktree is not a directory: {worktree_abs}")
    return WorkerConfig(
        worker_id=cleaned,
        worktree=worktree_abs,
        paths=LoopPaths.resolve(
            repo_root,
            issues=issues_path,
            session=session_path,
            ledger=ledger_path,
            trajectory=trajectory_path,
        ),
        authority=resolve_mutation_authority(mutation_mode, override_reason),
        policy=load_retry_policy(policy_path),
        work_cmd=None if agent_did_work else env_or(work_cmd, WORK_CMD_ENV, DEFAULT_WORK_CMD),
        verify_cmd=env_or(verify_cmd, VERIFY_CMD_ENV, DEFAULT_VERIFY_CMD),
        verify_witness=verify_witness or None,
        witness_prefix=env_or(witness_prefix, WITNESS_PREFIX_ENV, DEFAULT_WITNESS_PREFIX),
        lease_ttl_s=lease_ttl_s,
        command_timeout_s=command_timeout_s,
        output_cap=output_cap,
        backoff_scale=backoff_scale,
        lock_timeout_s=lock_timeout_s,
        pass_env=pass_env,
        host_action_transport=host_action_transport,
    )
