"""Why a coordinator (local or on Ray) stopped on failure: a worker failed, or only issues did.

specs/harness-loop.md "Coordinator" (divergence D35-3). A worker that ran its steps and ended 1
because issues failed or were escalated is not a failed worker: the coordinator then stops with
`issues_failed` (exit 1, as a rejected check). A worker process that died, could not start,
refused its options or stopped on a runtime error is `worker_failed` (exit 1, or 2 when the
worst worker refused its options).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from premath.terminal import counted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ISSUES_FAILED = "issues_failed"
WORKER_FAILED = "worker_failed"


@dataclass(frozen=True, slots=True)
class WorkerEnd:
    """How one worker ended: its exit code, its report (None: it printed none) and the error
    its runner recorded (a Ray task's, None otherwise)."""

    worker_id: str
    exit_code: int
    document: dict[str, Any] | None
    error: dict[str, Any] | None = None

    def failure(self) -> str | None:
        """Why the worker process itself failed; None when it ran its steps to their end."""
        if self.exit_code == 0:
            return None
        error = self.error or (self.document or {}).get("error")
        if isinstance(error, dict):
            return str(error.get("message") or error.get("code") or "error")
        if self.document is None:
            return f"exit {self.exit_code} without a report"
        if self.exit_code != 1 or not self.document.get("failedIssueIds"):
            return f"exit {self.exit_code}"
        return None


@dataclass(frozen=True, slots=True)
class FailureStop:
    reason: str
    exit_code: int
    summary: str
    """One line for the person watching: which workers, or how many issues."""


def failure_stop(ends: Sequence[WorkerEnd]) -> FailureStop | None:
    """The stop a round's failures call for; None when every worker ended 0."""
    failing = [end for end in ends if end.exit_code != 0]
    if not failing:
        return None
    broken = [(end, why) for end in failing if (why := end.failure()) is not None]
    if broken:
        shown = "; ".join(f"{end.worker_id}: {why}" for end, why in broken)
        worst = max(end.exit_code for end, _ in broken)
        failed = f"{counted(len(broken), 'worker')} failed ({shown})"
        return FailureStop(WORKER_FAILED, 2 if worst == 2 else 1, failed)
    from premath.issues.leases import natural_key

    issues = sorted(
        (i for end in failing for i in (end.document or {}).get("failedIssueIds", [])),
        key=natural_key,
    )
    return FailureStop(
        ISSUES_FAILED,
        1,
        f"{counted(len(issues), 'issue')} failed or escalated ({', '.join(issues)}); "
        "every worker ran to its end",
    )
