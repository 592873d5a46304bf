"""Running a step's work and verify commands, and typing how they failed.

A command is the user's shell string, as in the reference (`sh -lc <cmd>`); we run `sh -c`
(no login profile: start-up stays predictable) through `premath.runner.process.run_bounded`, in
the worktree, in its own process group, with a deadline and capped output files. The child sees
an allowlisted environment plus the step's context (`PREMATH_ISSUE_ID`, ...) and the variables
the user names with `--pass-env` (divergence D5-8: the reference passed its whole environment).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from premath.harness.retry import failure_classes_from_output, known_failure_classes
from premath.models.retry_policy import RetryPolicy
from premath.runner.interrupts import raise_if_stopped
from premath.runner.process import ProcessOutcome, allowlisted_env, passed_env, run_bounded

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SHELL = "sh"
# `sh` exits 127 when the program is not found and 126 when it cannot be executed: neither is a
# transient failure, so neither is a class the retry policy retries (D25-5).
NOT_FOUND_EXIT = 127
NOT_EXECUTABLE_EXIT = 126
COMMAND_NOT_FOUND = "command_not_found"
COMMAND_NOT_EXECUTABLE = "command_not_executable"
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.DOTALL)
# Words `sh` runs itself (builtins and keywords): no program on PATH to look for.
_SHELL_WORDS = frozenset({
    "!", ".", ":", "[", "{", "(", "alias", "bg", "break", "case", "cd", "command", "continue",
    "echo", "eval", "exec", "exit", "export", "false", "fg", "for", "getopts", "hash", "if",
    "jobs", "kill", "printf", "pwd", "read", "readonly", "return", "set", "shift", "test",
    "times", "trap", "true", "type", "ulimit", "umask", "unalias", "unset", "until", "wait",
    "while",
})  # fmt: skip


@dataclass(frozen=True, slots=True)
class CommandRun:
    name: str
    """`work` or `verify`."""
    command: str
    outcome: ProcessOutcome
    stdout_path: str
    stderr_path: str

    @property
    def ok(self) -> bool:
        return self.outcome.status == "ok"

    @property
    def truncated(self) -> bool:
        return self.outcome.stdout_truncated or self.outcome.stderr_truncated

    def to_document(self) -> dict[str, Any]:
        outcome = self.outcome
        return {
            "name": self.name,
            "command": self.command,
            "status": outcome.status,
            "exitCode": outcome.exit_code,
            "signal": outcome.signal,
            "durationSeconds": round(outcome.duration_s, 6),
            "stdoutPath": self.stdout_path,
            "stderrPath": self.stderr_path,
            "stdoutBytes": outcome.stdout_bytes,
            "stderrBytes": outcome.stderr_bytes,
            "truncated": self.truncated,
            **({"leftoverDescendants": n} if (n := outcome.leftover_descendants) else {}),
        }


def command_env(context: Mapping[str, str], pass_env: Sequence[str]) -> dict[str, str]:
    """The allowlist, the user's named variables, then the step's context over both."""
    env = allowlisted_env(passed_env(pass_env))
    env.update(context)
    return env


def run_command(
    name: str,
    command: str,
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout_s: float,
    output_cap: int,
    log_dir: str,
) -> CommandRun:
    """Run one command to completion or its deadline; its output goes to `<log_dir>/<name>.*`."""
    raise_if_stopped()  # a worker asked to stop starts no new command, even if it swallowed it
    Path(log_dir).mkdir(parents=True, exist_ok=True)
    stdout_path = os.path.join(log_dir, f"{name}.stdout")
    stderr_path = os.path.join(log_dir, f"{name}.stderr")
    outcome = run_bounded(
        [SHELL, "-c", command],
        cwd=cwd,
        env=env,
        timeout_s=timeout_s,
        stdout_path=stdout_path,
        stderr_path=stderr_path,
        output_cap=output_cap,
        group_ticket=os.path.join(log_dir, f"{name}.group"),
    )
    return CommandRun(name, command, outcome, stdout_path, stderr_path)


def failure_classes_of(
    run: CommandRun, policy: RetryPolicy, witness_classes: Sequence[str] = ()
) -> tuple[str, ...]:
    """Why a command failed, as retry-policy classes; () when it succeeded.

    Typed classes the command printed come first (only those the policy binds, D5-3), then the
    classes of the witness it wrote (as the reference classifies: process, then witness), then
    the class of the outcome: a program that does not exist (`sh` exit 127) is
    `command_not_found`, one that cannot be executed (exit 126) `command_not_executable` (no
    policy rule binds them: one attempt, then the default escalation; D25-5), another spawn
    failure `executor_unavailable`, the deadline `gate_timeout`, death by a signal we did not
    send `flaky_execution`, any other non-zero exit `check_failed`. A command that exited 0
    fails only through its witness.
    """
    outcome = run.outcome
    if outcome.status == "ok":
        return tuple(dict.fromkeys(witness_classes))
    printed = known_failure_classes(
        policy, failure_classes_from_output(outcome.stdout_tail, outcome.stderr_tail)
    )
    printed = tuple(dict.fromkeys([*printed, *witness_classes]))
    if outcome.exit_code == NOT_FOUND_EXIT or outcome.program_missing:
        fallback = COMMAND_NOT_FOUND
    elif outcome.exit_code == NOT_EXECUTABLE_EXIT:
        fallback = COMMAND_NOT_EXECUTABLE
    elif outcome.status == "spawn_failed":
        fallback = "executor_unavailable"
    elif outcome.status == "timeout":
        fallback = "gate_timeout"
    elif outcome.signal is not None:
        fallback = "flaky_execution"
    else:
        fallback = "check_failed"
    return (*printed, fallback) if fallback not in printed else printed


def missing_program(command: str, path: str, cwd: str) -> str | None:
    """The program `command` starts when it is not installed (not on `path`, or a path that
    does not exist from `cwd`); None when it is there, is a shell word, or cannot be told."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    # The first word that is not an assignment: `A=1 cmd` runs cmd.
    program = next((word for word in words if not _ASSIGNMENT.fullmatch(word)), None)
    if program is None or program in _SHELL_WORDS or any(c in program for c in "$`*?"):
        return None
    if "/" in program:
        return None if os.path.exists(os.path.join(cwd, program)) else program
    return None if shutil.which(program, path=path) else program


def error_message(run: CommandRun) -> str:
    """A one-line account of a failed command for its tool-result row and the handoff."""
    outcome = run.outcome
    if outcome.status == "spawn_failed":
        return outcome.spawn_error or "command could not be started"
    if outcome.status == "timeout":
        return (
            f"{run.name} command timed out after {outcome.duration_s:.1f}s; "
            "its process group was killed"
        )
    tail = (outcome.stderr_tail or outcome.stdout_tail).strip().splitlines()
    last = tail[-1] if tail else ""
    how = f"signal {outcome.signal}" if outcome.signal is not None else f"exit {outcome.exit_code}"
    return f"{run.name} command failed ({how})" + (f": {last}" if last else "")
