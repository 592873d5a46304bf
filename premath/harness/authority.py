"""The loop's issue-memory side: one interface, two authorities.

Every read and mutation the loop makes of issue memory (claim, the claimed issue, lease
snapshots, renew, release, finish, the escalation's follow-up issue, lease recovery) goes through
an `IssueAuthority`, so boot, step, stop and their gates are the same code whoever holds the
store (specs/remote-workers.md):

- `LocalAuthority` (the default): the issues file, through issue memory's own functions under
  the store lock, exactly as the loop always did;
- `premath.mcp.remote.McpAuthority`: the MCP server over streamable HTTP, the one authority of
  a fleet of remote workers (built by the CLI, the face that may load the MCP SDK).

Refusals are `PremathError`s of the classes the local functions raise (`LeaseRefused`,
`NotFound`, ...), so the step handles both alike; a server that cannot be reached within the
worker's bound raises `AuthorityUnreachable`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from premath.errors import LeaseRefused, NotFound
from premath.harness.handoff import LeaseSnapshot, read_lease_snapshot
from premath.issues.held import Discovery, Finished, finish_held, holder_problem
from premath.models.boot_report import BootFailureClass
from premath.models.vocabulary import is_escalation_title

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.harness.loop_paths import LoopPaths
    from premath.issues.held import FinishStatus


@dataclass(frozen=True, slots=True)
class Claimed:
    """A claim the authority granted: the issue and the lease it is held under."""

    issue_id: str
    lease_id: str | None


@dataclass(frozen=True, slots=True)
class BootView:
    """What `harness boot` reads of issue memory (specs/harness-loop.md "Boot")."""

    issues_root: dict[str, Any]
    """The `issues` memory root: where the store is and its state."""
    statuses: dict[str, str]
    """Every issue's status, by id."""
    ready_ids: list[str]
    integrity: dict[str, Any] | None
    """The active scope's `{graphScope, hasCycle, cyclePath}` (None: unreadable)."""
    snapshot_ref: str | None
    """`iss1_` of the store (None for a store not read as bytes: a remote authority)."""
    finding: tuple[BootFailureClass, str] | None = None
    """(`boot.issues_missing` or `boot.issues_invalid`, message) when it cannot be read."""


@dataclass(frozen=True, slots=True)
class HeldLease:
    """An issue that holds a lease, as a coordinator sees it (to wait for it or give it back)."""

    issue_id: str
    owner: str
    lease_id: str
    state: str
    """`active` or `stale`."""


class IssueAuthority(Protocol):
    """What the loop needs of issue memory; see the module doc."""

    def location(self) -> str:
        """Where the authority is: the issues file's path or the MCP server's URL."""

    def recorded_issues(self, paths: LoopPaths) -> tuple[str, str]:
        """(the store a session's snapshot ref is taken of, or "" for none; the name the
        loop's artifacts record for it)."""

    def boot_view(self, now: datetime) -> BootView:
        """Issue memory as boot reports it."""

    def claim_next(self, worker_id: str, *, ttl_s: int, now: datetime) -> Claimed | None:
        """Claim the next ready issue (or reclaim a stale one); None when nothing is ready."""

    def issue(self, issue_id: str, now: datetime) -> dict[str, Any]:
        """The issue as `issue show` prints it; {} when it does not exist."""

    def holder_lease(self, issue_id: str, worker_id: str, now: datetime) -> str:
        """The lease id `worker_id` holds `issue_id` under; NotFound or LeaseRefused else."""

    def snapshot(self, issue_id: str, now: datetime) -> LeaseSnapshot:
        """The issue's lease facts now (specs/harness-loop.md "Lease states")."""

    def renew(
        self,
        issue_id: str,
        worker_id: str,
        lease_id: str,
        *,
        ttl_s: int,
        now: datetime,
        patience_s: float | None = None,
        queue_state: Mapping[str, str] | None = None,
    ) -> None:
        """Extend the holder's lease; a refusal raises. `patience_s` bounds how long an
        unreachable authority is retried for this call (a heartbeat must not outlive its beat):
        one still unreachable then, but not given up on, is no refusal (the call returns and the
        next beat tries again). `queue_state`: the merge queue's transient state, recorded on
        the issue in the same write (premath.models.merge_queue)."""

    def release(
        self, issue_id: str, worker_id: str, lease_id: str | None, *, now: datetime
    ) -> None:
        """The holder gives its lease back (issue open again); a refusal raises."""

    def finish(
        self,
        issue_id: str,
        worker_id: str,
        lease_id: str | None,
        *,
        status: FinishStatus,
        now: datetime,
        note: str | None = None,
        witness_refs: Sequence[str] = (),
        discover: Discovery | None = None,
    ) -> Finished:
        """Close, block or give back the issue while `worker_id` holds it (issues/held.py)."""

    def dispatch(self, action: str, payload: dict[str, Any], *, now: datetime) -> dict[str, Any]:
        """A transport lease action's envelope (lease recovery, D5-12)."""

    def ready_ids(self, now: datetime) -> list[str]:
        """Ready issues a worker may claim, by id: escalations are left to people (D30a-1)."""

    def active_cycle(self, now: datetime) -> list[str] | None:
        """A dependency cycle in the active scope, or None (the coordinator's preflight)."""

    def held_leases(self, now: datetime) -> list[HeldLease]:
        """Every issue that holds a lease, by id."""

    def release_for(self, issue_id: str, owner: str, lease_id: str, *, now: datetime) -> bool:
        """Give back a lease on behalf of its owner (a coordinator whose workers were stopped);
        False when it was not there to give back."""


class LocalAuthority:
    """The issues file on this machine, through issue memory under its lock (the default)."""

    def __init__(self, path: str, lock_timeout_s: float) -> None:
        self.path = path
        self.lock_timeout_s = lock_timeout_s

    def location(self) -> str:
        return self.path

    def recorded_issues(self, paths: LoopPaths) -> tuple[str, str]:
        return self.path, paths.relative(self.path)

    def boot_view(self, now: datetime) -> BootView:
        import os

        from premath.errors import PremathError
        from premath.harness.memory_roots import file_root
        from premath.issues import graph
        from premath.issues.documents import integrity_document
        from premath.issues.leases import claim_order
        from premath.issues.memory import read_store
        from premath.issues.snapshot import snapshot_ref_of

        if not os.path.exists(self.path):
            missing: tuple[BootFailureClass, str] = (
                "boot.issues_missing",
                f"issues file not found: {self.path}",
            )
            return BootView(file_root("issues", self.path, self.path), {}, [], None, None, missing)
        try:
            issues = read_store(self.path, now)
        except PremathError as exc:
            root = file_root("issues", self.path, self.path, exc.message)
            return BootView(root, {}, [], None, None, ("boot.issues_invalid", exc.message))
        cycle = graph.integrity(issues, "active")
        return BootView(
            issues_root=file_root("issues", self.path, self.path),
            statuses={issue_id: row["status"] for issue_id, row in issues.items()},
            ready_ids=[row["id"] for row in graph.ready_issues(issues, order=claim_order)],
            integrity={"graphScope": "active", **integrity_document(cycle)},
            snapshot_ref=snapshot_ref_of(issues),
        )

    def claim_next(self, worker_id: str, *, ttl_s: int, now: datetime) -> Claimed | None:
        from premath.issues.memory import claim_next

        row = claim_next(
            self.path, worker_id, now=now, timeout_s=self.lock_timeout_s, ttl_seconds=ttl_s
        )
        if row is None:
            return None
        return Claimed(row["id"], row["lease"]["lease_id"])

    def issue(self, issue_id: str, now: datetime) -> dict[str, Any]:
        from premath.issues.memory import read_store
        from premath.issues.show import issue_detail

        try:
            return issue_detail(read_store(self.path, now), issue_id, now)
        except NotFound:
            return {}

    def holder_lease(self, issue_id: str, worker_id: str, now: datetime) -> str:
        from premath.issues.memory import read_store

        row = read_store(self.path, now).get(issue_id)
        if row is None:
            raise NotFound(f"issue not found: {issue_id} (in {self.path})")
        refused(issue_id, worker_id, holder_problem(row, worker_id, None))
        return row["lease"]["lease_id"]

    def snapshot(self, issue_id: str, now: datetime) -> LeaseSnapshot:
        return read_lease_snapshot(self.path, issue_id, now)

    def renew(
        self,
        issue_id: str,
        worker_id: str,
        lease_id: str,
        *,
        ttl_s: int,
        now: datetime,
        patience_s: float | None = None,
        queue_state: Mapping[str, str] | None = None,
    ) -> None:
        from premath.issues.held import put_queue_state
        from premath.issues.memory import renew_lease

        renew_lease(
            self.path,
            issue_id,
            worker_id,
            lease_id,
            now=now,
            timeout_s=self.lock_timeout_s,
            ttl_seconds=ttl_s,
            on_row=None if queue_state is None else lambda row: put_queue_state(row, queue_state),
        )

    def release(
        self, issue_id: str, worker_id: str, lease_id: str | None, *, now: datetime
    ) -> None:
        from premath.issues.memory import release_lease

        release_lease(
            self.path, issue_id, worker_id, lease_id, now=now, timeout_s=self.lock_timeout_s
        )

    def finish(
        self,
        issue_id: str,
        worker_id: str,
        lease_id: str | None,
        *,
        status: FinishStatus,
        now: datetime,
        note: str | None = None,
        witness_refs: Sequence[str] = (),
        discover: Discovery | None = None,
    ) -> Finished:
        return finish_held(
            self.path,
            issue_id,
            worker_id,
            lease_id,
            status=status,
            now=now,
            timeout_s=self.lock_timeout_s,
            note=note,
            witness_refs=witness_refs,
            discover=discover,
        )

    def dispatch(self, action: str, payload: dict[str, Any], *, now: datetime) -> dict[str, Any]:
        from premath.transport.dispatch import dispatch

        return dispatch(
            action, {**payload, "issuesPath": self.path}, now=now, timeout_s=self.lock_timeout_s
        )

    def ready_ids(self, now: datetime) -> list[str]:
        from premath.issues.memory import ready

        return [
            row["id"] for row in ready(self.path, now=now) if not is_escalation_title(row["title"])
        ]

    def active_cycle(self, now: datetime) -> list[str] | None:
        from premath.issues.memory import dep_diagnostics

        return dep_diagnostics(self.path, now=now, scope="active").cycle_path

    def held_leases(self, now: datetime) -> list[HeldLease]:
        from premath.issues.leases import lease_state
        from premath.issues.memory import read_store
        from premath.timefmt import epoch_nanos

        now_ns = epoch_nanos(now)
        issues = read_store(self.path, now)
        return [
            HeldLease(issue_id, lease["owner"], lease["lease_id"], lease_state(row, now_ns))
            for issue_id, row in sorted(issues.items())
            if (lease := row.get("lease")) is not None
        ]

    def release_for(self, issue_id: str, owner: str, lease_id: str, *, now: datetime) -> bool:
        from premath.errors import PremathError
        from premath.issues.memory import release_lease

        try:
            release_lease(
                self.path, issue_id, owner, lease_id, now=now, timeout_s=self.lock_timeout_s
            )
        except PremathError:
            return False
        return True


def refused(issue_id: str, worker_id: str, problem: str) -> None:
    """LeaseRefused naming what is wrong, unless nothing is."""
    if problem:
        raise LeaseRefused(
            f"worker {worker_id} does not hold {issue_id}: {problem}; "
            f"claim it first (premath harness claim --worker-id {worker_id})"
        )


def require_store(memory: IssueAuthority, paths: LoopPaths) -> None:
    """Refuse to start, writing nothing, where the issues file is the authority and there is
    none (no project here); a remote authority was reached when it was opened."""
    if isinstance(memory, LocalAuthority):
        paths.require_issues()
