"""An issue mutation with its write witness attached under the store's lock, framed as the MCP
tools and the host actions answer it (agent-surface.md §1.6): the action head, the operation's
own fields, the instruction link and the last row's witness."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from premath.ops.operation import Document, WriteTerms
from premath.timefmt import epoch_nanos

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@dataclass(frozen=True)
class Witnessing:
    """Who writes and under which instruction: what every witness of one call carries."""

    repo_root: str
    mutation_policy: str
    query_backend: str
    instruction: Document | None
    clock: Callable[[], datetime]
    timeout_s: Callable[[], float]
    """The lock budget, asked when the write starts (an MCP call's deadline runs on)."""
    warm: Any = None
    caller: str | None = None
    warns_held: bool = False
    scope_check: Callable[[str], None] | None = None
    """Refuses a written row the witness's scope does not name (a new issue of unknown id)."""


def witnessed_write(
    action: str, path: str, write: Callable[[WriteTerms], Document], how: Witnessing
) -> Document:
    """Run `write` (an operation's service call) with each changed row witnessed."""
    from premath.transport.write_witness import attach, jj_snapshot, write_witness

    jj = jj_snapshot(how.repo_root)
    written: list[Document] = []

    def on_row(row: Any) -> None:
        if how.scope_check is not None:
            how.scope_check(row["id"])
        witness = write_witness(
            action=action,
            issue_id=row["id"],
            issues_path=path,
            repo_root=how.repo_root,
            mutation_policy=how.mutation_policy,
            query_backend=how.query_backend,
            instruction=how.instruction,
            now_ns=epoch_nanos(how.clock()),
            jj=jj,
        )
        attach(row, witness)
        written.append(witness)

    terms = WriteTerms(
        path, how.clock(), how.timeout_s(), on_row, how.warm, how.caller, how.warns_held
    )
    fields = write(terms)
    head = {"action": action, "issuesPath": path, "queryBackend": how.query_backend}
    return {**head, **fields, "instruction": how.instruction, "writeWitness": written[-1]}
