"""One call of an extension action as its implementation sees it (host/extension_actions.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from premath.harness.host.context import HostContext

Document = dict[str, Any]


@dataclass(frozen=True)
class ActionCall:
    """The call as the pipeline resolved it."""

    action: str
    args: Any
    issue_id: str | None
    policy_digest: str | None
    instruction_ref: str | None
    step_id: str
    """`<prefix>.<callId>`: the default `stepId` of a row the call appends."""


def arg_path(args: Document, name: str, default: str) -> str:
    """The (confined) path argument, else the context's default (the caller's own choice)."""
    path: str = args.get(name, default)
    return path


@dataclass(frozen=True)
class ActionRun:
    call: ActionCall
    args: Document
    link: Document | None
    now: Callable[[], datetime]
    context: HostContext
    lock_timeout: float

    def issues_path(self) -> str:
        return arg_path(self.args, "issuesPath", self.context.issues_path)

    def instruction_refs(self, given: tuple[str, ...] = ()) -> tuple[str, ...]:
        """A record written under an instruction cites it."""
        ref = self.call.instruction_ref
        return (*given, ref) if ref is not None else given
