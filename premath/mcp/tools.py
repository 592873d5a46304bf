"""What each MCP tool does (agent-surface.md §1.4-§1.9): inputs in, the reference's result
document out, or ToolRefused with the tool error text.

Calls run concurrently on worker threads (the server's handlers never block each other,
D22-7): readers share a warm cache of their own; writers commit in groups (`GroupCommits`:
mutations arriving while a write is in flight share the next rewrite and fsync, each reply
waiting for the write holding its change) on a store of theirs, so a reader never sees a
store a writer is changing. Every
path a client names enters through `_client_path` (confinement, D22-1); each call's deadline
bounds its lock waits (`call_deadline`).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from premath.errors import InputInvalid, PremathError
from premath.issues import documents, graph, leases
from premath.issues.check import check_issues
from premath.mcp.caller import current_caller
from premath.mcp.ready_view import ReadyView, render_ready
from premath.mcp.worker_tools import WorkerTools
from premath.models.params import ArgumentRefused
from premath.observe.surface import SurfaceUnavailable
from premath.observe.views import (
    ObservationNotFound,
    ObserveQuery,
    ProjectionMatch,
    observe_result,
)
from premath.ops import catalogue as ops
from premath.ops.operation import Operation, WriteTerms
from premath.ops.witnessed import Witnessing, witnessed_write
from premath.store.confine import PathKind, PathRoots, confine
from premath.store.files import STORE_CAP, read_bounded
from premath.store.group_commit import GroupCommits
from premath.store.issues_file import IssueMap, WarmStores, file_identity
from premath.text import rust_trim
from premath.timefmt import epoch_nanos
from premath.transport.dispatch import dispatch
from premath.transport.instruction_link import (
    GateRefused,
    Link,
    Mutation,
    MutationPolicy,
    WitnessRules,
    WitnessTrust,
    resolve_instruction_link,
)
from premath.transport.write_witness import attach, jj_snapshot, write_witness

TYPE_CHECKING = False
if TYPE_CHECKING:
    from premath.clock import Clock
    from premath.models.issue_row import IssueRow

Document = dict[str, Any]

_DEADLINE: ContextVar[float | None] = ContextVar("premath_mcp_call_deadline", default=None)
_LOCK_MARGIN_S = 0.1
"""Lock waits end this long before the call's deadline, so a lock refusal reaches the caller."""


@contextlib.contextmanager
def call_deadline(deadline: float | None) -> Iterator[None]:
    """Run the block as one call whose lock waits end by `deadline` (time.monotonic)."""
    token = _DEADLINE.set(deadline)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


@dataclass(frozen=True)
class Rendered:
    """A result document already rendered as the server sends it (pretty sorted JSON)."""

    text: str


class ToolRefused(Exception):
    """A tool call answered with an error result; `message` is its text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class ServerConfig:
    """`mcp-serve`'s options, resolved once at start-up."""

    issues_path: str = ".premath/issues.jsonl"
    query_backend: str = "jsonl"
    projection_path: str = ".premath/surreal_issue_cache.json"
    mutation_policy: MutationPolicy = "instruction-linked"
    surface_path: str = "artifacts/observation/latest.json"
    repo_root: str = "."
    lock_timeout_s: float = 10.0
    allowed_paths: tuple[str, ...] = ()
    """Folders besides the repository root that client-named paths may resolve into."""
    witness_trust: WitnessTrust = "mac"
    witness_max_age_s: float | None = None
    witness_key_file: str | None = None
    trajectory_path: str = ".premath/harness_trajectory.jsonl"
    """The fleet's trajectory (relative to `repo_root`): remote workers' rows land there."""
    single_token: bool = True
    """One bearer token (one trust domain): any caller may act as any worker id."""


def _issue_fields(row: IssueRow, now_ns: int) -> Document:
    return {"issue": documents.lease_summary(row, now_ns)}


class ToolService(WorkerTools):
    """One server's tools over its configuration, clock and warm stores."""

    config: ServerConfig

    def __init__(self, config: ServerConfig, clock: Clock) -> None:
        self.config = config
        self.clock = clock
        self.roots = PathRoots.of(config.repo_root, config.allowed_paths)
        self.rules = WitnessRules(
            trust=config.witness_trust,
            max_age_s=config.witness_max_age_s,
            roots=self.roots,
            key_file=config.witness_key_file,
        )
        self.warm = GroupCommits()
        """The writers' stores, committed in groups."""
        self._read_warm = WarmStores()
        self._read_locks: dict[str, threading.Lock] = {}
        self._projecting = threading.Lock()
        self._ready_views: dict[str, ReadyView] = {}
        self._records: dict[str, Any] = {}
        self._records_lock = threading.Lock()

    def _read(self, path: str, now: datetime) -> IssueMap:
        """The store at `path`, warm while the file is unchanged; a refusal names the file. The
        map is the readers' own: writers change theirs, never one a reader holds."""
        if not os.path.exists(path):
            raise ToolRefused(f"issues file not found: {path}")
        try:
            with self._read_locks.setdefault(path, threading.Lock()):
                return self._read_warm.read(path, now)
        except PremathError as exc:
            message = exc.message
            if not message.startswith("failed to load"):
                message = f"failed to load {path}: {message}"
            raise ToolRefused(message) from None

    # --- inputs --------------------------------------------------------------------------------

    def _client_path(self, args: Document, name: str, kind: PathKind = "file") -> str | None:
        """The trimmed path a client named in `name` (None when absent or blank), confined to
        the roots (D22-1): every client-named path enters here."""
        given = rust_trim(args.get(name) or "")
        return confine(self.roots, name, given, kind) if given else None

    def _issues_path(self, args: Document) -> str:
        return self._client_path(args, "issuesPath") or self.config.issues_path

    def _blank_none(self, args: Document, name: str) -> str | None:
        value = args.get(name)
        return value if value is not None and rust_trim(value) else None

    def _query_source(self, path: str, issues: IssueMap) -> str:
        """`jsonl`, or in surreal mode `surreal-projection` with the projection kept fresh."""
        if self.config.query_backend != "surreal":
            return "jsonl"
        from premath.issues.projection import projection_is_stale, write_projection

        with self._projecting:  # calls run on threads: one projection write at a time
            if projection_is_stale(self.config.projection_path, path):
                now_ns = epoch_nanos(self.clock.now())
                try:
                    write_projection(self.config.projection_path, issues, path, now_ns)
                except OSError as exc:
                    raise ToolRefused(
                        f"failed to write projection {self.config.projection_path}: {exc}"
                    ) from None
        return "surreal-projection"

    def _refresh_projection(self, path: str) -> None:
        """After a mutation in surreal mode: the projection follows the saved store."""
        if self.config.query_backend == "surreal" and os.path.exists(path):
            self._query_source(path, self._read(path, self.clock.now()))

    def _head(self, action: str, path: str) -> Document:
        return {"action": action, "issuesPath": path, "queryBackend": self.config.query_backend}

    # --- readers -------------------------------------------------------------------------------

    def issue_ready(self, args: Document) -> Rendered:
        """Rendered once per store version and lease epoch (`ready_view`)."""
        now = self.clock.now()
        path = self._issues_path(args)
        identity = file_identity(path)
        issues = self._read(path, now)
        head = {**self._head("issue.ready", path), "querySource": self._query_source(path, issues)}
        now_ns = epoch_nanos(now)
        view = self._ready_views.get(path)
        if view is None or not view.holds(head, identity, issues, now_ns):
            view = render_ready(head, identity, issues, now_ns)
            self._ready_views[path] = view
        return Rendered(view.text(now_ns))

    def issue_list(self, args: Document) -> Document:
        now = self.clock.now()
        path = self._issues_path(args)
        issues = self._read(path, now)
        now_ns = epoch_nanos(now)
        status = self._blank_none(args, "status")
        assignee = self._blank_none(args, "assignee")
        rows = [
            row
            for row in issues.values()
            if (status is None or row["status"] == status)
            and (assignee is None or row.get("assignee", "") == assignee)
        ]
        rows.sort(key=leases.claim_order)  # the order claim-next takes them (D25-1)
        items = [documents.lease_summary(row, now_ns) for row in rows]
        return {
            **self._head("issue.list", path),
            "querySource": self._query_source(path, issues),
            "count": len(items),
            "items": items,
        }

    def issue_check(self, args: Document) -> Document:
        path = self._issues_path(args)
        issues = self._read(path, self.clock.now())
        report = check_issues(issues, args.get("noteWarnThreshold", 2000))
        return documents.check_document(path, report)

    def issue_blocked(self, args: Document) -> Document:
        path = self._issues_path(args)
        issues = self._read(path, self.clock.now())
        items = documents.blocked_document(path, graph.blocked_issues(issues))["items"]
        return {
            **self._head("issue.blocked", path),
            "querySource": self._query_source(path, issues),
            "count": len(items),
            "items": items,
        }

    def issue_lease_projection(self, args: Document) -> Document:
        now = self.clock.now()
        path = self._issues_path(args)
        issues = self._read(path, now)
        now_ns = epoch_nanos(now)
        projection = leases.lease_projection(issues, now_ns)
        items = documents.lease_items(projection)
        return {
            **self._head("issue.lease_projection", path),
            "querySource": self._query_source(path, issues),
            "projection": documents.projection_fields(projection),
            "count": len(items),
            "items": items,
        }

    def dep_diagnostics(self, args: Document) -> Document:
        path = self._issues_path(args)
        scope = args.get("graphScope", "active")
        issues = self._read(path, self.clock.now())
        return {
            **self._head("dep.diagnostics", path),
            "graphScope": scope,
            "integrity": documents.integrity_document(graph.integrity(issues, scope)),
        }

    # --- gated mutations ------------------------------------------------------------------------

    def _gate(self, action: str, args: Document, *issue_ids: str) -> Link:
        """The instruction gate for `action`; `issue_ids` are the issues it will change, when
        known before it runs (the witness's scope must name them, D22-5)."""
        try:
            return resolve_instruction_link(
                self.config.mutation_policy,
                args.get("instructionId"),
                self.config.repo_root,
                Mutation(action, issue_ids),
                now_ns=epoch_nanos(self.clock.now()),
                rules=self.rules,
            )
        except GateRefused as refused:
            raise ToolRefused(refused.message) from None

    def _timeout(self) -> float:
        """The lock timeout, cut to end just before the call's deadline: a write that cannot
        start in time never starts, and its caller hears the lock's own refusal."""
        deadline = _DEADLINE.get()
        if deadline is None:
            return self.config.lock_timeout_s
        left = deadline - time.monotonic() - _LOCK_MARGIN_S
        return max(0.0, min(self.config.lock_timeout_s, left))

    def _witness(
        self, action: str, path: str, link: Link, issue_id: str, jj: Document | None
    ) -> Document:
        return write_witness(
            action=action,
            issue_id=issue_id,
            issues_path=path,
            repo_root=self.config.repo_root,
            mutation_policy=self.config.mutation_policy,
            query_backend=self.config.query_backend,
            instruction=link.document,
            now_ns=epoch_nanos(self.clock.now()),
            jj=jj,
        )

    def _write(
        self,
        action: str,
        args: Document,
        write: Callable[[WriteTerms], Document],
        *,
        must_exist: bool = True,
        targets: tuple[str, ...] = (),
    ) -> Document:
        """Gate, then run a memory writer with the witness attached under its lock
        (ops/witnessed.py). `targets` are the issues the witness's scope must name; without
        them (a new issue of unknown id) the written row must be one it names, else the write
        is aborted."""
        path = self._issues_path(args)
        if must_exist and not os.path.exists(path):
            raise ToolRefused(f"issues file not found: {path}")
        link = self._gate(action, args, *targets)

        def outside_scope(issue_id: str) -> None:
            link.refuse_outside_scope(action, issue_id)

        how = Witnessing(
            repo_root=self.config.repo_root,
            mutation_policy=self.config.mutation_policy,
            query_backend=self.config.query_backend,
            instruction=link.document,
            clock=self.clock.now,
            timeout_s=self._timeout,
            warm=self.warm,
            caller=current_caller(),
            warns_held=True,
            scope_check=None if targets else outside_scope,
        )
        try:
            document = witnessed_write(action, path, write, how)
        except PremathError as exc:
            raise ToolRefused(exc.message) from None
        except GateRefused as refused:
            raise ToolRefused(refused.message) from None
        self._refresh_projection(path)
        return document

    def run_operation(self, operation: Operation, args: Document) -> Document:
        """An issue mutation of the catalogue (premath/ops/): check, gate on its issue, run."""
        assert operation.run is not None
        assert operation.issue_param is not None
        run = operation.run
        try:
            checked = operation.check(args)
        except ArgumentRefused as refused:
            raise ToolRefused(refused.message) from None
        target = checked.get(operation.issue_param)
        return self._write(
            operation.action,
            checked,
            lambda terms: run(checked, terms),
            must_exist=not operation.creates_store,
            targets=() if target is None else (target,),
        )

    # --- lease tools: the transport's actions, witness attached under the same lock -----------

    def _lease(
        self,
        operation: Operation,
        args: Document,
        edit: Callable[[IssueRow], None] | None = None,
    ) -> Document:
        """Claim, claim-next, renew or release (premath/ops/leases.py) through its transport
        action, with the parameters the transport takes. A witness scoped to issues authorises
        these on its issues only; claim-next chooses among them (D22-5). `edit` changes the
        row in the same write (a renewal's merge queue state)."""
        action = operation.action
        link = self._gate(action, args, *([args["id"]] if "id" in args else []))
        path = self._issues_path(args)
        taken = operation.params_at("transport")
        payload = {p.name: args[p.name] for p in taken if p.name in args and not p.path}
        payload["issuesPath"] = path
        jj = jj_snapshot(self.config.repo_root)
        written: dict[str, Any] = {}

        def on_change(row: IssueRow) -> None:
            if edit is not None:
                edit(row)
            written["witness"] = self._witness(action, path, link, row["id"], jj)
            attach(row, written["witness"])
            if action in _CLAIMS and (lease := row.get("lease")) is not None:
                self._fleet_record(path).note_grant(
                    row["id"], lease["owner"], lease["lease_id"], timeout_s=self._timeout()
                )

        envelope = dispatch(
            str(operation.faces.transport),
            payload,
            now=self.clock.now(),
            timeout_s=self._timeout(),
            on_change=on_change,
            warm=self.warm,
            issue_scope=link.issue_scope,
        )
        if envelope.get("changed"):
            self._refresh_projection(path)
        if envelope["result"] != "accepted":
            classes = envelope.get("failureClasses") or ["transport_rejected"]
            diagnostic = envelope.get("diagnostic", f"transport action rejected: {action}")
            raise ToolRefused(f"[failureClass={classes[0]}] {diagnostic}")
        result = {
            **self._head(action, path),
            "changed": envelope["changed"],
            "instruction": link.document,
            "writeWitness": written.get("witness"),
            "leaseProjection": envelope["leaseProjection"],
            "resolverWitnessRef": envelope["resolverWitnessRef"],
            "resolverWitness": envelope["resolverWitness"],
        }
        if "issue" in envelope:
            result["issue"] = envelope["issue"]
        return result

    def issue_claim(self, args: Document) -> Document:
        return self._lease(ops.ISSUE_CLAIM, args)

    def issue_claim_next(self, args: Document) -> Document:
        return self._lease(ops.ISSUE_CLAIM_NEXT, args)

    def issue_lease_renew(self, args: Document) -> Document:
        """The reference's renewal; `mergeQueue` (ours) records the merge queue's transient
        state on the renewed issue in the same write (specs/remote-workers.md "Merge queue")."""
        from premath.issues.held import put_queue_state
        from premath.models.merge_queue import parse_queue_state

        if args.get("mergeQueue") is None:
            return self._lease(ops.ISSUE_LEASE_RENEW, args)
        try:
            record = parse_queue_state(args["mergeQueue"])
        except PremathError as exc:
            raise ToolRefused(exc.message) from None
        return self._lease(ops.ISSUE_LEASE_RENEW, args, lambda row: put_queue_state(row, record))

    def issue_lease_release(self, args: Document) -> Document:
        return self._lease(ops.ISSUE_LEASE_RELEASE, args)

    # --- what a remote worker needs besides the reference's tools (D23-2) ----------------------

    def issue_show(self, args: Document) -> Document:
        """`issue show`'s item, and the lease state a loop hands off on (specs/harness-loop.md
        "Lease states"); an unknown id is a tool error `issue not found: <id>`."""
        from premath.issues.show import issue_detail

        now = self.clock.now()
        path = self._issues_path(args)
        issues = self._read(path, now)
        issue_id = args["id"]
        row = issues.get(issue_id)
        if row is None:
            raise ToolRefused(f"issue not found: {issue_id}")
        return {
            "action": "issue.show",
            "issuesPath": path,
            "issue": issue_detail(issues, issue_id, now),
            "leaseState": leases.loop_lease_state(row, epoch_nanos(now)),
        }

    def issue_lease_finish(self, args: Document) -> Document:
        """The lease holder closes, blocks or gives back its issue (premath/issues/held.py),
        gated as `issue.lease_finish` on that issue; the write witness lands on every row it
        changes (a discovered follow-up issue too). Refused unless the caller holds the lease."""
        from premath.issues.held import Discovery, check_finish, finish_held

        issue_id, assignee = args["id"], rust_trim(args["assignee"])
        discover = None
        if (title := self._blank_none(args, "discoverTitle")) is not None:
            discover = Discovery(title, args.get("discoverDescription", ""))
        try:
            status = check_finish(args["status"], discover)
        except PremathError as exc:
            raise ToolRefused(exc.message) from None
        path = self._issues_path(args)
        if not os.path.exists(path):
            raise ToolRefused(f"issues file not found: {path}")
        action = ops.ISSUE_LEASE_FINISH.action
        link = self._gate(action, args, issue_id)
        jj = jj_snapshot(self.config.repo_root)
        written: list[Document] = []

        def on_row(row: IssueRow) -> None:
            witness = self._witness(action, path, link, row["id"], jj)
            attach(row, witness)
            written.append(witness)

        now = self.clock.now()
        try:
            finished = finish_held(
                path,
                issue_id,
                assignee,
                args["leaseId"],
                status=status,
                now=now,
                timeout_s=self._timeout(),
                note=self._blank_none(args, "notes"),
                witness_refs=args.get("witnessRefs", ()),
                discover=discover,
                on_row=on_row,
                warm=self.warm,
            )
        except PremathError as exc:
            raise ToolRefused(exc.message) from None
        if not finished.applied:
            raise ToolRefused(
                f"[failureClass={finished.failure_class}] cannot finish {issue_id} for "
                f"{assignee}: {finished.reason}"
            )
        self._refresh_projection(path)
        row = self._read(path, self.clock.now())[issue_id]
        return {
            **self._head(action, path),
            "changed": True,
            "status": status,
            "createdIssueId": finished.created_issue_id,
            **_issue_fields(row, epoch_nanos(now)),
            "instruction": link.document,
            "writeWitness": written[-1],
        }

    # --- observation surface --------------------------------------------------------------------

    def _surface(self, args: Document) -> str:
        """The surface a call names (`surfacePath`, confined), else the server's `--surface`."""
        return self._client_path(args, "surfacePath") or self.config.surface_path

    def _observe(self, args: Document, query: ObserveQuery) -> Document:
        """Every `observe_*` tool: premath.observe's loader and views (agent-surface.md §1.9)."""
        try:
            return observe_result(self._surface(args), query)
        except SurfaceUnavailable as exc:
            raise ToolRefused(exc.message) from None
        except ObservationNotFound as exc:
            raise ToolRefused(exc.query_failure) from None

    def observe_latest(self, args: Document) -> Document:
        return self._observe(args, ObserveQuery("latest"))

    def observe_needs_attention(self, args: Document) -> Document:
        return self._observe(args, ObserveQuery("needs_attention"))

    def observe_instruction(self, args: Document) -> Document:
        return self._observe(args, ObserveQuery("instruction", args["instructionId"]))

    def observe_projection(self, args: Document) -> Document:
        alias = args.get("projectionMatch", "typed") == "compatibility_alias"
        match: ProjectionMatch = "compatibility_alias" if alias else "typed"
        return self._observe(args, ObserveQuery("projection", args["projectionDigest"], match))

    # --- substrate and instruction tools ----------------------------------------------------------

    def init_tool(self, args: Document) -> Document:
        """`init_layout` (agent-surface.md §5.5), flat fields as the reference's tool returns."""
        from premath.store.atomic import write_atomic

        root_arg = rust_trim(args.get("rootPath", ""))
        root = os.path.join(self.config.repo_root, root_arg) if root_arg else self.config.repo_root
        if os.path.isabs(root_arg):
            root = root_arg
        if root_arg:
            confine(self.roots, "rootPath", root, "folder")
        premath_dir = os.path.join(root, ".premath")
        issues_path = os.path.join(premath_dir, "issues.jsonl")
        legacy = os.path.join(root, ".beads", "issues.jsonl")
        created = {"repo": not os.path.exists(root), "dir": False, "file": False}
        migrated = None
        try:
            os.makedirs(root, exist_ok=True)
            if not os.path.isdir(root):
                raise ToolRefused(f"init path is not a directory: {root}")
            created["dir"] = not os.path.exists(premath_dir)
            os.makedirs(premath_dir, exist_ok=True)
            if os.path.exists(issues_path) and not os.path.isfile(issues_path):
                raise ToolRefused(f"issues path exists but is not a file: {issues_path}")
            if not os.path.exists(issues_path):
                data = b""
                if os.path.isfile(legacy):
                    data = read_bounded(legacy, STORE_CAP)
                    migrated = legacy
                write_atomic(issues_path, data)
                created["file"] = True
        except OSError as exc:
            raise ToolRefused(f"failed to initialize {issues_path}: {exc}") from None
        except InputInvalid as exc:
            raise ToolRefused(f"failed to initialize {issues_path}: {exc.message}") from None
        return {
            "action": "init.tool",
            "repoRoot": root,
            "premathDir": premath_dir,
            "issuesPath": issues_path,
            "createdRepoRoot": created["repo"],
            "createdPremathDir": created["dir"],
            "createdIssuesFile": created["file"],
            "migratedFromLegacy": migrated,
        }

    def not_available(self, tool: str, owner: str) -> Document:
        raise ToolRefused(f"{tool} is not available in this build yet ({owner})")

    def issue_backend_status(self, args: Document) -> Document:
        return self.not_available("issue_backend_status", "issue 14: issue backend-status")

    def _instruction_path(self, args: Document) -> str:
        given = args["instructionPath"]
        path = given if os.path.isabs(given) else os.path.join(self.config.repo_root, given)
        return confine(self.roots, "instructionPath", path)

    def instruction_check(self, args: Document) -> Document:
        """`instruction-check` as data: envelope problems are `ok: false`, never a tool error."""
        from premath.harness.instruction.envelope import check_envelope
        from premath.harness.instruction.errors import InstructionError
        from premath.store.canonical import document_bytes

        path = self._instruction_path(args)
        head = {"action": "instruction.check", "repoRoot": self.config.repo_root}
        try:
            _, envelope = check_envelope(path, self.config.repo_root)
        except InstructionError as exc:
            failed = {"ok": False, "exitCode": 2, "stdout": "", "stderr": truncated(exc.message)}
            return {**head, "instructionPath": path, **failed}
        text = document_bytes(envelope).decode("utf-8").removesuffix("\n")
        passed = {"ok": True, "exitCode": 0, "stdout": truncated(text), "stderr": ""}
        return {**head, "instructionPath": path, **passed}

    def instruction_run(self, args: Document) -> Document:
        """The instruction pipeline, in-process (D12-8): check, run the requested checks, write
        `artifacts/ciwitness/<stem>.json` and its MAC. Gated like a mutation (action
        `instruction.run`), and it never replaces an accepted witness of another run (D22-4)."""
        from pathlib import Path

        from premath.harness.instruction.pipeline import RunTerms, run_instruction
        from premath.harness.instruction.witness import refuse_accepted_overwrite
        from premath.store.canonical import stdout_bytes

        path = self._instruction_path(args)
        self._gate("instruction.run", args)
        allow_failure = bool(args.get("allowFailure", False))
        stem = os.path.splitext(os.path.basename(path))[0]
        witness = os.path.join(self.config.repo_root, "artifacts", "ciwitness", f"{stem}.json")
        confine(self.roots, "witness folder", os.path.dirname(witness), "folder")
        keep = self.config.witness_trust == "mac"
        if keep:
            refuse_accepted_overwrite(Path(witness))
        terms = RunTerms(
            keep_accepted=keep, key_file=self.config.witness_key_file, deadline=_DEADLINE.get()
        )
        result = run_instruction(path, self.config.repo_root, now=self.clock.now, terms=terms)
        if result.invalid is not None:
            exit_code, stderr = 2, result.invalid.message
        else:
            exit_code = 0 if result.witness.accepted or allow_failure else 1
            stderr = ""
        stdout = stdout_bytes(result.to_document()).decode("utf-8")
        return {
            "action": "instruction.run",
            "repoRoot": self.config.repo_root,
            "instructionPath": path,
            "allowFailure": allow_failure,
            "ok": exit_code == 0,
            "exitCode": exit_code,
            "witnessPath": witness,
            "witnessExists": os.path.exists(witness),
            "stdout": truncated(stdout),
            "stderr": truncated(stderr),
        }

    # --- the fleet's record (specs/remote-workers.md "The fleet's record") ----------------------

    def _fleet_record(self, issues_path: str) -> Any:
        """The one `FleetRecord` of this server for an issues file (its lock orders appends)."""
        from premath.harness.fleet_record import FleetRecord

        with self._records_lock:
            record = self._records.get(issues_path)
            if record is None:
                trajectory = os.path.join(self.config.repo_root, self.config.trajectory_path)
                record = FleetRecord(trajectory, issues_path, self.config.lock_timeout_s)
                self._records[issues_path] = record
            return record

    def harness_trajectory_append(self, args: Document) -> Document:
        """Append a remote worker's step row, with its step record, to the fleet's trajectory:
        gated as `harness.trajectory_append` on the row's issue, idempotent by step id."""
        worker_id = rust_trim(args["workerId"])
        self._acting_as(worker_id)
        fields = args["row"]
        issue_id = fields.get("issueId") if isinstance(fields, dict) else None
        scoped = (issue_id,) if isinstance(issue_id, str) and rust_trim(issue_id) else ()
        link = self._gate("harness.trajectory_append", args, *scoped)
        files = [_step_file(item) for item in args.get("stepFiles", ())]
        path = self._issues_path(args)
        record = self._fleet_record(path)

        def holds_now(issue: str, worker: str, lease_id: str) -> bool:
            row = self._read(path, self.clock.now()).get(issue) if os.path.exists(path) else None
            lease = None if row is None else row.get("lease")
            return lease is not None and (lease["owner"], lease["lease_id"]) == (worker, lease_id)

        try:
            done = record.append(
                worker_id,
                args.get("leaseId"),
                fields,
                files,
                timeout_s=self._timeout(),
                holds_now=holds_now,
            )
        except PremathError as exc:
            raise ToolRefused(exc.message) from None
        return {
            "action": "harness.trajectory_append",
            "path": record.trajectory_path,
            "appended": done.appended,
            "row": done.row,
            "stepRecordPath": done.record_path,
            "stepRecordBytes": done.record_bytes,
            "instruction": link.document,
        }


_CLAIMS = frozenset({ops.ISSUE_CLAIM.action, ops.ISSUE_CLAIM_NEXT.action})


def _step_file(item: Any) -> Any:
    from premath.harness.fleet_record import StepFile

    if not isinstance(item, dict) or not all(
        isinstance(item.get(key), str) for key in ("path", "text")
    ):
        raise ToolRefused(
            "[failureClass=trajectory.step_record_invalid] each stepFiles item is an object "
            "with string `path` and `text`"
        )
    return StepFile(item["path"], item["text"])


PAYLOAD_LIMIT_BYTES = 16_000


def truncated(text: str) -> str:
    """At most 16,000 bytes of UTF-8 and `...[truncated N bytes]`; cut at a character
    boundary (the reference cuts at the byte and can panic there, §6 quirk 3)."""
    data = text.encode("utf-8")
    if len(data) <= PAYLOAD_LIMIT_BYTES:
        return text
    head = data[:PAYLOAD_LIMIT_BYTES].decode("utf-8", errors="ignore")
    return f"{head}...[truncated {len(data) - len(head.encode('utf-8'))} bytes]"
