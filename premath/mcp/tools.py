"""What each MCP tool does (agent-surface.md §1.4-§1.9): inputs in, the reference's result
document out, or ToolRefused with the tool error text."""

import os
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

from premath.clock import Clock
from premath.errors import PremathError
from premath.issues import documents, graph, leases
from premath.issues import memory as issue_memory
from premath.issues.check import check_issues
from premath.mcp.ready_view import ReadyView, render_ready
from premath.models.issue_row import DEPENDENCY_TYPES, IssueRow
from premath.store.issues_file import IssueMap, WarmStores, file_identity
from premath.text import rust_trim
from premath.timefmt import epoch_nanos
from premath.transport.dispatch import dispatch
from premath.transport.instruction_link import (
    GateRefused,
    Mutation,
    MutationPolicy,
    resolve_instruction_link,
)
from premath.transport.write_witness import attach, jj_snapshot, write_witness

Document = dict[str, Any]


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


def _issue_fields(row: IssueRow, now_ns: int) -> Document:
    return {"issue": documents.lease_summary(row, now_ns)}


class ToolService:
    """One server's tools over its configuration, clock and warm stores."""

    def __init__(self, config: ServerConfig, clock: Clock) -> None:
        self.config = config
        self.clock = clock
        self.warm = WarmStores()
        self._ready_views: dict[str, ReadyView] = {}

    def _read(self, path: str, now: datetime) -> IssueMap:
        """The store at `path`, warm while the file is unchanged; a refusal names the file."""
        if not os.path.exists(path):
            raise ToolRefused(f"issues file not found: {path}")
        try:
            return self.warm.read(path, now)
        except PremathError as exc:
            message = exc.message
            if not message.startswith("failed to load"):
                message = f"failed to load {path}: {message}"
            raise ToolRefused(message) from None

    # --- inputs --------------------------------------------------------------------------------

    def _issues_path(self, args: Document) -> str:
        return rust_trim(args.get("issuesPath", "")) or self.config.issues_path

    def _blank_none(self, args: Document, name: str) -> str | None:
        value = args.get(name)
        return value if value is not None and rust_trim(value) else None

    def _query_source(self, path: str, issues: IssueMap) -> str:
        """`jsonl`, or in surreal mode `surreal-projection` with the projection kept fresh."""
        if self.config.query_backend != "surreal":
            return "jsonl"
        from premath.issues.projection import projection_is_stale, write_projection

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

    def _gate(self, action: str, args: Document) -> Document | None:
        try:
            return resolve_instruction_link(
                self.config.mutation_policy,
                args.get("instructionId"),
                self.config.repo_root,
                Mutation(action),
            )
        except GateRefused as refused:
            raise ToolRefused(refused.message) from None

    def _witness(
        self, action: str, path: str, link: Document | None, issue_id: str, jj: Document | None
    ) -> Document:
        return write_witness(
            action=action,
            issue_id=issue_id,
            issues_path=path,
            repo_root=self.config.repo_root,
            mutation_policy=self.config.mutation_policy,
            query_backend=self.config.query_backend,
            instruction=link,
            now_ns=epoch_nanos(self.clock.now()),
            jj=jj,
        )

    def _write(
        self,
        action: str,
        args: Document,
        run: Any,
        extra: Any,
        *,
        must_exist: bool = True,
    ) -> Document:
        """Gate, then run a memory writer with the witness attached under its lock. The result
        is built from the row the writer changed: `extra(row)` gives the tool's own fields
        (`issue` or `dependency`), then the instruction link and the witness."""
        path = self._issues_path(args)
        if must_exist and not os.path.exists(path):
            raise ToolRefused(f"issues file not found: {path}")
        link = self._gate(action, args)
        jj = jj_snapshot(self.config.repo_root)
        now = self.clock.now()
        written: list[tuple[IssueRow, Document]] = []

        def on_row(row: IssueRow) -> None:
            witness = self._witness(action, path, link, row["id"], jj)
            attach(row, witness)
            written.append((row, witness))

        try:
            run(path, now, on_row)
        except PremathError as exc:
            raise ToolRefused(exc.message) from None
        self._refresh_projection(path)
        row, witness = written[-1]
        return {
            **self._head(action, path),
            **extra(row, epoch_nanos(now)),
            "instruction": link,
            "writeWitness": witness,
        }

    def _timeout(self) -> float:
        return self.config.lock_timeout_s

    def issue_add(self, args: Document) -> Document:
        fields = self._new_issue_fields(args)
        if (status := self._blank_none(args, "status")) is not None:
            fields["status"] = status
        return self._write(
            "issue.add",
            args,
            lambda path, now, on_row: issue_memory.add_issue(
                path, args["title"], now=now, timeout_s=self._timeout(), on_row=on_row, **fields
            ),
            _issue_fields,
            must_exist=False,
        )

    def _new_issue_fields(self, args: Document) -> Document:
        fields: Document = {
            "issue_id": self._blank_none(args, "id"),
            "description": args.get("description", ""),
            "priority": args.get("priority", 2),
            "issue_type": self._blank_none(args, "issueType") or "task",
            "assignee": args.get("assignee", ""),
            "owner": args.get("owner", ""),
        }
        return fields

    def issue_discover(self, args: Document) -> Document:
        fields = self._new_issue_fields(args)
        parent = args["parentIssueId"]

        def extra(row: IssueRow, now_ns: int) -> Document:
            edge = {"issueId": row["id"], "dependsOnId": parent, "type": "discovered-from"}
            return {**_issue_fields(row, now_ns), "dependency": edge}

        return self._write(
            "issue.discover",
            args,
            lambda path, now, on_row: issue_memory.discover_issue(
                path,
                parent,
                args["title"],
                now=now,
                timeout_s=self._timeout(),
                on_row=on_row,
                **fields,
            ),
            extra,
        )

    def issue_update(self, args: Document) -> Document:
        fields = {
            name: args.get(name)
            for name in ("title", "description", "notes", "priority", "assignee", "owner")
        }
        fields["status"] = self._blank_none(args, "status")
        return self._write(
            "issue.update",
            args,
            lambda path, now, on_row: issue_memory.update_issue(
                path, args["id"], now=now, timeout_s=self._timeout(), on_row=on_row, **fields
            ),
            _issue_fields,
        )

    def _dep_type(self, args: Document, name: str) -> str:
        value = self._blank_none(args, name) or "blocks"
        if value not in DEPENDENCY_TYPES:
            raise ToolRefused(
                f"invalid dep_type `{value}` (expected one of: {', '.join(DEPENDENCY_TYPES)})"
            )
        return value

    @staticmethod
    def _edge(**fields: str) -> Any:
        return lambda row, now_ns: {"dependency": fields}

    def dep_add(self, args: Document) -> Document:
        kind = self._dep_type(args, "depType")
        created_by = args.get("createdBy", "")
        issue_id, target = args["issueId"], args["dependsOnId"]
        return self._write(
            "dep.add",
            args,
            lambda path, now, on_row: issue_memory.dep_add(
                path,
                issue_id,
                target,
                kind=kind,
                created_by=created_by,
                now=now,
                timeout_s=self._timeout(),
                on_row=on_row,
            ),
            self._edge(issueId=issue_id, dependsOnId=target, type=kind, createdBy=created_by),
        )

    def dep_remove(self, args: Document) -> Document:
        kind = self._dep_type(args, "depType")
        issue_id, target = args["issueId"], args["dependsOnId"]
        return self._write(
            "dep.remove",
            args,
            lambda path, now, on_row: issue_memory.dep_remove(
                path, issue_id, target, kind=kind, now=now, timeout_s=self._timeout(), on_row=on_row
            ),
            self._edge(issueId=issue_id, dependsOnId=target, type=kind),
        )

    def dep_replace(self, args: Document) -> Document:
        from_kind = self._dep_type(args, "fromDepType")
        to_kind = self._dep_type(args, "toDepType")
        created_by = args.get("createdBy", "")
        issue_id, target = args["issueId"], args["dependsOnId"]
        return self._write(
            "dep.replace",
            args,
            lambda path, now, on_row: issue_memory.dep_replace(
                path,
                issue_id,
                target,
                from_kind=from_kind,
                to_kind=to_kind,
                created_by=created_by,
                now=now,
                timeout_s=self._timeout(),
                on_row=on_row,
            ),
            self._edge(
                issueId=issue_id,
                dependsOnId=target,
                fromType=from_kind,
                toType=to_kind,
                createdBy=created_by,
            ),
        )

    # --- lease tools: the transport's actions, witness attached under the same lock -----------

    def _lease(self, action: str, args: Document, payload: Document) -> Document:
        link = self._gate(action, args)
        path = self._issues_path(args)
        payload = {**payload, "issuesPath": path}
        jj = jj_snapshot(self.config.repo_root)
        written: dict[str, Any] = {}

        def on_change(row: IssueRow) -> None:
            written["witness"] = self._witness(action, path, link, row["id"], jj)
            attach(row, written["witness"])

        envelope = dispatch(
            action,
            payload,
            now=self.clock.now(),
            timeout_s=self._timeout(),
            on_change=on_change,
            warm=self.warm,
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
            "instruction": link,
            "writeWitness": written.get("witness"),
            "leaseProjection": envelope["leaseProjection"],
            "resolverWitnessRef": envelope["resolverWitnessRef"],
            "resolverWitness": envelope["resolverWitness"],
        }
        if "issue" in envelope:
            result["issue"] = envelope["issue"]
        return result

    def _lease_payload(self, args: Document, *names: str) -> Document:
        return {name: args[name] for name in names if name in args}

    def issue_claim(self, args: Document) -> Document:
        payload = self._lease_payload(
            args, "id", "assignee", "leaseId", "leaseTtlSeconds", "leaseExpiresAt"
        )
        return self._lease("issue.claim", args, payload)

    def issue_claim_next(self, args: Document) -> Document:
        payload = self._lease_payload(args, "assignee", "leaseId", "leaseTtlSeconds")
        return self._lease("issue.claim_next", args, payload)

    def issue_lease_renew(self, args: Document) -> Document:
        payload = self._lease_payload(
            args, "id", "assignee", "leaseId", "leaseTtlSeconds", "leaseExpiresAt"
        )
        return self._lease("issue.lease_renew", args, payload)

    def issue_lease_release(self, args: Document) -> Document:
        payload = self._lease_payload(args, "id", "assignee", "leaseId")
        return self._lease("issue.lease_release", args, payload)

    # --- observation surface --------------------------------------------------------------------

    def _surface(self, args: Document) -> tuple[str, Document]:
        path = rust_trim(args.get("surfacePath", "")) or self.config.surface_path
        lead = f"failed to load observation surface at {path}: "
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            raise ToolRefused(f"{lead}failed to read observation surface: {exc}") from None
        try:
            surface = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise ToolRefused(f"{lead}failed to parse observation surface JSON: {exc}") from None
        if not isinstance(surface, dict):
            raise ToolRefused(f"{lead}failed to parse observation surface JSON: not an object")
        schema = surface.get("schema")
        if schema != 1:
            raise ToolRefused(
                f"{lead}invalid observation surface: schema mismatch (expected=1, actual={schema})"
            )
        kind = surface.get("surfaceKind")
        if kind != "ci.observation.surface.v0":
            raise ToolRefused(
                f"{lead}invalid observation surface: surfaceKind mismatch "
                f"(expected=ci.observation.surface.v0, actual={kind})"
            )
        return path, surface

    def _latest(self, surface: Document) -> Document:
        latest = surface.get("latest") or {}
        return {key: latest.get(key) for key in ("delta", "required", "decision")}

    def observe_latest(self, args: Document) -> Document:
        path, surface = self._surface(args)
        view = {"summary": surface.get("summary"), "latest": self._latest(surface)}
        return {"action": "observe.latest", "surfacePath": path, "view": view}

    def observe_needs_attention(self, args: Document) -> Document:
        path, surface = self._surface(args)
        summary = surface.get("summary") or {}
        keys = (
            "needsAttention",
            "state",
            "topFailureClass",
            "latestProjectionDigest",
            "latestInstructionId",
            "coherence",
        )
        view = {key: summary.get(key) for key in keys}
        return {"action": "observe.needs_attention", "surfacePath": path, "view": view}

    def observe_instruction(self, args: Document) -> Document:
        path, surface = self._surface(args)
        wanted = args["instructionId"]
        for row in surface.get("instructions") or []:
            if isinstance(row, dict) and row.get("instructionId") == wanted:
                return {"action": "observe.instruction", "surfacePath": path, "view": row}
        raise ToolRefused(f"failed to query instruction: instruction not found: {wanted}")

    def observe_projection(self, args: Document) -> Document:
        path, surface = self._surface(args)
        digest = args["projectionDigest"]
        alias = args.get("projectionMatch", "typed") == "compatibility_alias"
        latest = self._latest(surface)

        def kept(row: Any) -> Any:
            if not isinstance(row, dict):
                return None
            if row.get("typedCoreProjectionDigest") == digest:
                return row
            return row if alias and row.get("projectionDigest") == digest else None

        view = {"projectionDigest": digest, **{key: kept(row) for key, row in latest.items()}}
        if all(view[key] is None for key in latest):
            raise ToolRefused(f"failed to query projection: projection not found: {digest}")
        return {"action": "observe.projection", "surfacePath": path, "view": view}

    # --- substrate and instruction tools ----------------------------------------------------------

    def init_tool(self, args: Document) -> Document:
        """`init_layout` (agent-surface.md §5.5), flat fields as the reference's tool returns."""
        from premath.store.atomic import write_atomic

        root_arg = rust_trim(args.get("rootPath", ""))
        root = os.path.join(self.config.repo_root, root_arg) if root_arg else self.config.repo_root
        if os.path.isabs(root_arg):
            root = root_arg
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
                    with open(legacy, "rb") as handle:
                        data = handle.read()
                    migrated = legacy
                write_atomic(issues_path, data)
                created["file"] = True
        except OSError as exc:
            raise ToolRefused(f"failed to initialize {issues_path}: {exc}") from None
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
        return given if os.path.isabs(given) else os.path.join(self.config.repo_root, given)

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
        `artifacts/ciwitness/<stem>.json`."""
        from premath.harness.instruction.pipeline import run_instruction
        from premath.store.canonical import stdout_bytes

        path = self._instruction_path(args)
        allow_failure = bool(args.get("allowFailure", False))
        result = run_instruction(path, self.config.repo_root, now=self.clock.now)
        if result.invalid is not None:
            exit_code, stderr = 2, result.invalid.message
        else:
            exit_code = 0 if result.witness.accepted or allow_failure else 1
            stderr = ""
        stem = os.path.splitext(os.path.basename(path))[0]
        witness = os.path.join(self.config.repo_root, "artifacts", "ciwitness", f"{stem}.json")
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


PAYLOAD_LIMIT_BYTES = 16_000


def truncated(text: str) -> str:
    """At most 16,000 bytes of UTF-8 and `...[truncated N bytes]`; cut at a character
    boundary (the reference cuts at the byte and can panic there, §6 quirk 3)."""
    data = text.encode("utf-8")
    if len(data) <= PAYLOAD_LIMIT_BYTES:
        return text
    head = data[:PAYLOAD_LIMIT_BYTES].decode("utf-8", errors="ignore")
    return f"{head}...[truncated {len(data) - len(head.encode('utf-8'))} bytes]"
