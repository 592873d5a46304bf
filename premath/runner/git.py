"""The `git` command line, through `run_bounded` like every process premath starts.

A remote worker (specs/remote-workers.md "Delivery") clones, commits and pushes with the git
binary the node already has, so its remotes, credentials and transports are the user's own. Each
call is bounded in time, reads nothing from a terminal (`GIT_TERMINAL_PROMPT=0`), and keeps the
last 64 KiB of each output stream in memory (git's answers here are short).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from premath.runner.process import allowlisted_env, run_bounded

GIT_TIMEOUT_S = 300.0
_TAIL = 64 * 1024
_PASSED = ("SSH_AUTH_SOCK", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_CONFIG_GLOBAL")
"""Besides the allowlist: what a user's git needs to reach their remotes."""


@dataclass(frozen=True, slots=True)
class GitRun:
    ok: bool
    exit_code: int | None
    stdout: str
    stderr: str

    def why(self) -> str:
        """git's own last words, for a message."""
        text = (self.stderr or self.stdout).strip()
        return text.splitlines()[-1] if text else f"exit {self.exit_code}"


def run_git(
    args: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str] | None = None,
    timeout_s: float = GIT_TIMEOUT_S,
) -> GitRun:
    """`git <args>` in `cwd`; never raises for git's behaviour (a missing git is not ok)."""
    child_env = allowlisted_env({name: os.environ[name] for name in _PASSED if name in os.environ})
    child_env.update({"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", **(env or {})})
    outcome = run_bounded(
        ["git", *args],
        cwd=cwd,
        env=child_env,
        timeout_s=timeout_s,
        stdout_path=None,
        stderr_path=None,
        output_cap=_TAIL,
        tail_bytes=_TAIL,
    )
    return GitRun(
        ok=outcome.status == "ok",
        exit_code=outcome.exit_code,
        stdout=outcome.stdout_tail,
        stderr=outcome.stderr_tail or (outcome.spawn_error or ""),
    )
