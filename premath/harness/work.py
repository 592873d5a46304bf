"""A loop step's work: a shell command (`--work-cmd`) or a host program (`--work-program`).

Both are a `WorkStep`: given the claimed issue's context, run once and return a run the gate
types (its failure classes, its join-check tool calls). The harness contract's migration path
ends with the work step being one bounded `scheme_eval` program (seed 003 §14.3): the worker
claims, the program's host calls are its only effect path (each a `premath.host_effect.v0`
envelope and trajectory row, mutations instruction-linked, shell and network denied), and
verification, close and escalation stay the loop's (specs/harness-loop.md "Work program").

A program runs in-process under a call budget (checked before anything is claimed) and the
step's deadline (`--command-timeout-seconds`): the claimed issue is every call's `issueId`, the
loop's issues, session, ledger and trajectory are its default paths, its rows carry the step's
lineage and step ids under `<step id>.work-<attempt>`; the result document is kept beside the
command logs (`work.effects.json`) for `scheme-eval --replay`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from premath.errors import InvalidUsage
from premath.harness.commands import CommandRun, failure_classes_of, run_command
from premath.models.retry_policy import RetryPolicy

TYPE_CHECKING = False
if TYPE_CHECKING:  # the evaluator loads only where a program runs (start-up budget)
    from typing import Any

    from premath.harness.host.evaluate import LoadedProgram

EFFECTS_FILE = "work.effects.json"
HOST_EFFECT_SCHEME = "host-effect://"


@dataclass(frozen=True)
class WorkContext:
    """What a work step knows of its step: the claim, where to run and log, its limits."""

    worker_id: str
    issue_id: str
    lease_id: str | None
    step_id: str
    attempt: int
    lineage_refs: tuple[str, ...]
    worktree: str
    repo_root: str
    issues_path: str
    session_path: str
    ledger_path: str
    trajectory_path: str
    log_dir: str
    env: Mapping[str, str]
    timeout_s: float
    output_cap: int
    lock_timeout_s: float
    now: Callable[[], datetime]


@dataclass(frozen=True)
class ProgramRun:
    """One evaluation of the work program: its result document and where it is kept."""

    program: str
    document: dict[str, Any]
    effects_path: str
    duration_s: float
    name: str = "work"

    @property
    def ok(self) -> bool:
        return bool(self.document["result"] == "accepted")

    @property
    def truncated(self) -> bool:
        return False

    @property
    def effects(self) -> list[dict[str, Any]]:
        effects: list[dict[str, Any]] = self.document["effects"]
        return effects

    def failure_classes(self) -> tuple[str, ...]:
        """The refused call's own classes (its `resultClass` first); () when all were accepted."""
        refused = [e for e in self.effects if e["resultClass"] != "accepted"]
        return tuple(refused[-1]["failureClasses"]) if refused else ()

    def host_effect_refs(self) -> tuple[str, ...]:
        return tuple(
            ref
            for e in self.effects
            for ref in e["witnessRefs"]
            if ref.startswith(HOST_EFFECT_SCHEME)
        )

    def to_document(self) -> dict[str, Any]:
        document = self.document
        return {
            "name": self.name,
            "program": self.program,
            "result": document["result"],
            "executedCallCount": document["executedCallCount"],
            "failureClasses": list(self.failure_classes()),
            "durationSeconds": round(self.duration_s, 6),
            "effectsPath": self.effects_path,
            "hostEffectRefs": list(self.host_effect_refs()),
        }


StepRun = CommandRun | ProgramRun


def run_failure_classes(
    run: StepRun, policy: RetryPolicy, witness_classes: Sequence[str] = ()
) -> tuple[str, ...]:
    """Why a run failed, as retry-policy classes: a command's typed outcome, a program's
    refused call's class."""
    if isinstance(run, ProgramRun):
        return tuple(dict.fromkeys([*run.failure_classes(), *witness_classes]))
    return failure_classes_of(run, policy, witness_classes)


class WorkStep(Protocol):
    def run(self, context: WorkContext) -> StepRun: ...


@dataclass(frozen=True)
class ShellWork:
    """`--work-cmd`: `sh -c <command>` in the worktree (commands.py)."""

    command: str

    def run(self, context: WorkContext) -> StepRun:
        return run_command(
            "work",
            self.command,
            cwd=context.worktree,
            env=context.env,
            timeout_s=context.timeout_s,
            output_cap=context.output_cap,
            log_dir=context.log_dir,
        )


@dataclass(frozen=True)
class ProgramWork:
    """`--work-program`: a host-action program, loaded and checked once before any claim."""

    path: str
    loaded: LoadedProgram
    options: Any
    """The `EvalOptions` it was loaded with (contract, extension, budget)."""

    def run(self, context: WorkContext) -> StepRun:
        from dataclasses import replace

        from premath.harness.host.context import HostContext
        from premath.harness.host.evaluate import run_program
        from premath.store.atomic import write_atomic
        from premath.store.canonical import stdout_bytes

        started = time.monotonic()
        host = HostContext(
            repo_root=_from_cwd(context.repo_root),
            base_dir=_from_cwd(context.repo_root),
            issues_path=_from_cwd(context.issues_path),
            session_path=_from_cwd(context.session_path),
            ledger_path=_from_cwd(context.ledger_path),
            trajectory_path=_from_cwd(context.trajectory_path),
            surface_path=_from_cwd(
                os.path.join(context.repo_root, "artifacts", "observation", "latest.json")
            ),
            lineage_refs=context.lineage_refs,
            deadline=started + context.timeout_s,
        )
        options = replace(
            self.options,
            step_prefix=f"{context.step_id}.work-{context.attempt}",
            bindings=replace(self.options.bindings, issue_id=context.issue_id),
            context=host,
        )
        document = run_program(
            self.loaded, options, now=context.now, lock_timeout=context.lock_timeout_s
        )
        os.makedirs(context.log_dir, exist_ok=True)
        effects_path = os.path.join(context.log_dir, EFFECTS_FILE)
        write_atomic(effects_path, stdout_bytes(document))
        return ProgramRun(self.path, document, effects_path, time.monotonic() - started)


def _from_cwd(path: str) -> str:
    """A path as the program's documents echo it: relative to the working folder, so a worker
    started at the repository root names `.premath/issues.jsonl` as everyone else does."""
    return os.path.relpath(path)


def load_work_program(
    path: str, *, repo_root: str, max_calls: int, contract: str | None = None
) -> ProgramWork:
    """The program at `path`, refused as a usage error (exit 2) before anything is claimed when
    it cannot run (unreadable, malformed, over `max_calls`, the contract or extension unusable)
    or any call would be refused whatever the stores hold (an unknown or denied action, missing
    mutation evidence, arguments of the wrong type)."""
    from premath.harness.host.contract import BUILTIN_CONTRACT_PATH, resolve_contract_path
    from premath.harness.host.evaluate import EvalOptions, load_program, static_refusals
    from premath.harness.host.extension import resolve_extension_path
    from premath.harness.host.startup import StartupError

    contract_path = resolve_contract_path(contract, repo_root=repo_root)
    options = EvalOptions(
        program_path=path,
        contract_path=contract_path,
        max_calls=max_calls,
        extension_path=resolve_extension_path(
            None, repo_root=repo_root, builtin_contract=contract_path == str(BUILTIN_CONTRACT_PATH)
        ),
    )
    try:
        loaded = load_program(options)
    except StartupError as exc:
        raise InvalidUsage(f"--work-program {path} cannot run: {exc.message}") from None
    refused = static_refusals(loaded, options.bindings)
    if refused:
        listed = "; ".join(
            f"call {call.index} {call.call_id} ({call.action}): {diagnostic} ({failure_class})"
            for call, failure_class, diagnostic in refused
        )
        raise InvalidUsage(f"--work-program {path} would be refused: {listed}")
    return ProgramWork(path, loaded, options)
