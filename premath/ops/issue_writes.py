"""Issue and dependency mutations (specs/issue-memory.md): `dep.add|remove|replace`,
`issue.update` and `issue.discover`, each declared once for the MCP tools, the host actions and
the CLI (its command, help texts included, is built from the declaration: cli/_operations.py).

`issue update` is a hot command, so this module is on the fast path: it holds the data, and
each run imports the issue memory when it runs."""

from __future__ import annotations

from premath.models.issue_row import DEPENDENCY_TYPES
from premath.models.params import ArgumentRefused, param, snake_case
from premath.ops.operation import CliFace, Faces, Operation

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.models.issue_row import IssueRow
    from premath.models.params import Param
    from premath.ops.operation import Document, Run, WriteTerms

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.models.issue_row import IssueRow

MCP_ONLY = frozenset({"mcp"})
ISSUES = param("issuesPath", path=True)
INSTRUCTION = param("instructionId", faces=MCP_ONLY)
"""A host action's instruction comes with the call; an MCP tool names it."""
WRITE_FAILURES = (
    "scheme_eval.invalid_program",
    "mutation.instruction_witness_rejected",
    "scheme_eval.host_action_execution_error",
)
"""An argument refused, the gate refused, the store refused (host actions' classes; the
MCP tools answer each as a tool error)."""


def _blank_none(args: Document, name: str) -> str | None:
    from premath.text import rust_trim

    value = args.get(name)
    return value if value is not None and rust_trim(value) else None


def _dep_type(args: Document, name: str) -> str:
    value = _blank_none(args, name) or "blocks"
    if value not in DEPENDENCY_TYPES:
        raise ArgumentRefused(
            f"invalid dep_type `{value}` (expected one of: {', '.join(DEPENDENCY_TYPES)})"
        )
    return value


def _dep_checked(args: Document) -> Document:
    checked = {**args, "createdBy": args.get("createdBy", "")}
    for name in ("depType", "fromDepType", "toDepType"):
        checked[name] = _dep_type(args, name)
    return checked


def _dep_add(args: Document, terms: WriteTerms) -> Document:
    from premath.issues import memory as issue_memory

    issue_id, target = args["issueId"], args["dependsOnId"]
    kind, created_by = args["depType"], args["createdBy"]
    issue_memory.dep_add(
        terms.path, issue_id, target, kind=kind, created_by=created_by, **terms.store_terms()
    )
    edge = {"issueId": issue_id, "dependsOnId": target, "type": kind, "createdBy": created_by}
    return {"dependency": edge}


def _dep_remove(args: Document, terms: WriteTerms) -> Document:
    from premath.issues import memory as issue_memory

    issue_id, target, kind = args["issueId"], args["dependsOnId"], args["depType"]
    issue_memory.dep_remove(terms.path, issue_id, target, kind=kind, **terms.store_terms())
    return {"dependency": {"issueId": issue_id, "dependsOnId": target, "type": kind}}


def _dep_replace(args: Document, terms: WriteTerms) -> Document:
    from premath.issues import memory as issue_memory

    issue_id, target = args["issueId"], args["dependsOnId"]
    from_kind, to_kind = args["fromDepType"], args["toDepType"]
    issue_memory.dep_replace(
        terms.path,
        issue_id,
        target,
        from_kind=from_kind,
        to_kind=to_kind,
        created_by=args["createdBy"],
        **terms.store_terms(),
    )
    edge = {
        "issueId": issue_id,
        "dependsOnId": target,
        "fromType": from_kind,
        "toType": to_kind,
        "createdBy": args["createdBy"],
    }
    return {"dependency": edge}


UPDATE_PARAMS = (
    param("title", verbatim=True),
    param("description", verbatim=True),
    param("notes", verbatim=True),
    param("status"),
    param("priority", "i32"),
    param("assignee", verbatim=True),
    param("owner", verbatim=True),
)
"""`issue update`'s fields, for every face: a new field is one parameter here, its help line
in `UPDATE_HELP`, and its keyword in issues/memory.py's `update_issue`."""
UPDATE_FIELDS = tuple(spec.name for spec in UPDATE_PARAMS)
UPDATE_HELP = {
    "title": "New title",
    "description": "New description",
    "notes": "New notes",
    "notesFile": "Read new notes from a file (`-` for stdin)",
    "status": "New status (closing releases the lease)",
    "priority": "New priority: a whole number, lower is more urgent",
    "assignee": "New assignee",
    "owner": "New owner",
}
"""The command line's help for each field; `notesFile` (`--notes-file`) is its own."""


def _update_flags() -> dict[str, str]:
    """`--<field>` (kebab-case) for each field in order, `--notes-file` after `--notes`, then
    `--issues`."""
    flags: dict[str, str] = {}
    for name in UPDATE_FIELDS:
        flags[name] = "--" + snake_case(name).replace("_", "-")
        if name == "notes":
            flags["notesFile"] = "--notes-file"
    return {**flags, **_ISSUES_FLAG}


def _update_checked(args: Document) -> Document:
    return {**args, "status": _blank_none(args, "status")}


def _issue_update(args: Document, terms: WriteTerms) -> Document:
    from premath.issues import documents, leases
    from premath.issues import memory as issue_memory
    from premath.timefmt import epoch_nanos

    held: list[str] = []

    def before(row: IssueRow) -> None:
        # Ours (D35-4): the reply of an update of someone else's held issue says so.
        said = leases.holder_warning(
            args["id"], row.get("lease"), terms.caller, epoch_nanos(terms.now)
        )
        held.extend([said] if said else [])

    edits: dict[str, Any] = {snake_case(name): args.get(name) for name in UPDATE_FIELDS}
    row = issue_memory.update_issue(
        terms.path,
        args["id"],
        before=before if terms.warns_held else None,
        **edits,
        **terms.store_terms(),
    )
    fields: Document = {"issue": documents.lease_summary(row, epoch_nanos(terms.now))}
    return {**fields, "warnings": held} if held else fields


def _edge_params(*, replace: bool = False, created_by: bool = True) -> tuple[Param, ...]:
    kinds = (
        (
            param("fromDepType", choices=DEPENDENCY_TYPES),
            param("toDepType", required=True, choices=DEPENDENCY_TYPES),
        )
        if replace
        else (param("depType", choices=DEPENDENCY_TYPES),)
    )
    return (
        param("issueId", required=True),
        param("dependsOnId", required=True),
        *kinds,
        *((param("createdBy", verbatim=True),) if created_by else ()),
        INSTRUCTION,
        ISSUES,
    )


def _dep(
    verb: str,
    summary: str,
    run: Run,
    *,
    options: dict[str, str],
    help_text: str,
    presented: dict[str, dict[str, Any]],
    omits: dict[str, tuple[str, ...]] | None = None,
    replace: bool = False,
    created_by: bool = True,
) -> Operation:
    return Operation(
        action=f"dep.{verb}",
        summary=summary,
        params=_edge_params(replace=replace, created_by=created_by),
        faces=Faces(
            mcp=f"dep_{verb}",
            host=f"dep.{verb}",
            cli=CliFace(
                ("dep", verb),
                ("issueId", "dependsOnId"),
                options,
                omits or {},
                help=help_text,
                presented={
                    "issueId": {"metavar": "ISSUE"},
                    "dependsOnId": {"metavar": "DEPENDS_ON"},
                    **presented,
                },
            ),
        ),
        run=run,
        check=_dep_checked,
        mutates=True,
        gate=f"dep.{verb}",
        issue_param="issueId",
        failure_classes=WRITE_FAILURES,
        read_only=False,
    )


_ISSUES_FLAG = {"issuesPath": "--issues"}
_TYPES_HELP = f"one of {', '.join(DEPENDENCY_TYPES)}"
"""The types in the option's help: as a metavar their list would be one line of 130 columns."""
_EDGE_TYPE = {"metavar": "TYPE", "default": "blocks", "show_default": True}
DEP_ADD = _dep(
    "add",
    "Add a dependency edge between issues",
    _dep_add,
    options={"depType": "--type", "createdBy": "--created-by", **_ISSUES_FLAG},
    help_text="""Make ISSUE depend on DEPENDS_ON. Self-loops, duplicates and cycles are refused.

    \b
    premath dep add bd-2 bd-1 --type blocks --json
    """,
    presented={
        "depType": {**_EDGE_TYPE, "help": f"Dependency type: {_TYPES_HELP}"},
        "createdBy": {"default": "", "help": "Who added the edge"},
    },
    omits={"dependency": ("createdBy",)},
)
DEP_REMOVE = _dep(
    "remove",
    "Remove a dependency edge between issues",
    _dep_remove,
    options={"depType": "--type", **_ISSUES_FLAG},
    help_text="""Remove the ISSUE -> DEPENDS_ON edge of one type.

    \b
    premath dep remove bd-2 bd-1 --type blocks --json
    """,
    presented={"depType": {**_EDGE_TYPE, "help": f"Dependency type: {_TYPES_HELP}"}},
    created_by=False,
)
DEP_REPLACE = _dep(
    "replace",
    "Replace one dependency edge type with another",
    _dep_replace,
    options={
        "fromDepType": "--from-type",
        "toDepType": "--to-type",
        "createdBy": "--created-by",
        **_ISSUES_FLAG,
    },
    help_text="""Change the type of the ISSUE -> DEPENDS_ON edge in place.

    \b
    premath dep replace bd-2 bd-1 --from-type blocks --to-type related --json
    """,
    presented={
        "fromDepType": {**_EDGE_TYPE, "help": f"The edge's current type: {_TYPES_HELP}"},
        "toDepType": {"metavar": "TYPE", "help": "The edge's new type"},
        "createdBy": {"default": "", "help": "Who changed the edge (kept when blank)"},
    },
    replace=True,
)
ISSUE_UPDATE = Operation(
    action="issue.update",
    summary="Update mutable issue fields by id",
    params=(param("id", required=True), *UPDATE_PARAMS, INSTRUCTION, ISSUES),
    faces=Faces(
        mcp="issue_update",
        host="issue.update",
        cli=CliFace(
            ("issue", "update"),
            ("id",),
            _update_flags(),
            help="""Update fields of an issue.

    \b
    premath issue update bd-1 --status closed --json
    """,
            presented={
                "id": {"metavar": "ID"},
                **{name: {"help": text} for name, text in UPDATE_HELP.items()},
                "priority": {"kind": "priority", "help": UPDATE_HELP["priority"]},
            },
        ),
    ),
    run=_issue_update,
    check=_update_checked,
    mutates=True,
    gate="issue.update",
    issue_param="id",
    failure_classes=WRITE_FAILURES,
    read_only=False,
    hot=True,
)


_NEW_ISSUE_FLAGS = {
    "id": "--id",
    "description": "--description",
    "priority": "--priority",
    "issueType": "--type",
    "assignee": "--assignee",
    "owner": "--owner",
    **_ISSUES_FLAG,
}
NEW_ISSUE_DEFAULTS: Document = {
    "description": "",
    "priority": 2,
    "assignee": "",
    "owner": "",
}
"""A new issue's fields where the call leaves them out (lifecycle.NewIssue's defaults)."""


def _new_issue_checked(args: Document) -> Document:
    return {
        **NEW_ISSUE_DEFAULTS,
        **args,
        "id": _blank_none(args, "id"),
        "issueType": _blank_none(args, "issueType") or "task",
        "status": _blank_none(args, "status"),
    }


def _new_issue_fields(args: Document) -> Document:
    """`issues/memory`'s keywords for a new issue (lifecycle.NewIssue's fields)."""
    fields = {
        "issue_id": args["id"],
        "description": args["description"],
        "priority": args["priority"],
        "issue_type": args["issueType"],
        "assignee": args["assignee"],
        "owner": args["owner"],
    }
    return fields if args["status"] is None else {**fields, "status": args["status"]}


def _issue_add(args: Document, terms: WriteTerms) -> Document:
    from premath.issues import documents
    from premath.issues import memory as issue_memory
    from premath.timefmt import epoch_nanos

    row = issue_memory.add_issue(
        terms.path, args["title"], **_new_issue_fields(args), **terms.store_terms()
    )
    return {"issue": documents.lease_summary(row, epoch_nanos(terms.now))}


def _issue_discover(args: Document, terms: WriteTerms) -> Document:
    from premath.issues import documents
    from premath.issues import memory as issue_memory
    from premath.timefmt import epoch_nanos

    parent = args["parentIssueId"]
    row = issue_memory.discover_issue(
        terms.path, parent, args["title"], **_new_issue_fields(args), **terms.store_terms()
    )
    edge = {"issueId": row["id"], "dependsOnId": parent, "type": "discovered-from"}
    return {"issue": documents.lease_summary(row, epoch_nanos(terms.now)), "dependency": edge}


ISSUE_DISCOVER = Operation(
    action="issue.discover",
    summary="Create a follow-up issue and link it with discovered-from dependency",
    params=(
        param("parentIssueId", required=True),
        param("title", required=True),
        param("id"),
        param("description", verbatim=True),
        param("priority", "i32"),
        param("issueType"),
        param("assignee", verbatim=True),
        param("owner", verbatim=True),
        INSTRUCTION,
        ISSUES,
    ),
    faces=Faces(
        mcp="issue_discover",
        host="issue.discover",
        cli=CliFace(
            ("issue", "discover"),
            ("parentIssueId", "title"),
            _NEW_ISSUE_FLAGS,
        ),
    ),
    run=_issue_discover,
    check=_new_issue_checked,
    mutates=True,
    gate="issue.discover",
    issue_param="parentIssueId",
    failure_classes=WRITE_FAILURES,
    read_only=False,
)
ISSUE_ADD = Operation(
    action="issue.add",
    summary="Add an issue to the JSONL substrate",
    params=(
        param("title", required=True),
        param("id"),
        param("description"),
        param("status"),
        param("priority", "i32"),
        param("issueType"),
        param("assignee"),
        param("owner"),
        INSTRUCTION,
        ISSUES,
    ),
    faces=Faces(
        mcp="issue_add",
        cli=CliFace(("issue", "add"), ("title",), {**_NEW_ISSUE_FLAGS, "status": "--status"}),
    ),
    run=_issue_add,
    check=_new_issue_checked,
    mutates=True,
    gate="issue.add",
    issue_param="id",
    creates_store=True,
    failure_classes=WRITE_FAILURES,
    read_only=False,
)
