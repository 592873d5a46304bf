"""`premath dep ...`: dependency edges between issues, their views and cycle diagnostics."""

from __future__ import annotations

import click

from premath.cli._issues import issues_option, lines_text
from premath.cli._operations import operation_command
from premath.cli._options import json_option
from premath.cli._root import AppContext, Reply, StrictGroup, pass_app
from premath.models.issue_row import DEPENDENCY_TYPES
from premath.models.vocabulary import EDGE_VIEWS, GRAPH_SCOPES
from premath.ops.catalogue import DEP_ADD, DEP_REMOVE, DEP_REPLACE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.models.vocabulary import EdgeView, GraphScope

dependency_type = click.Choice(DEPENDENCY_TYPES)
TYPES_HELP = f"one of {', '.join(DEPENDENCY_TYPES)}"
"""The types in the option's help: as a metavar their list would be one line of 130 columns."""


def _integrity_text(integrity: dict[str, Any]) -> str:
    if not integrity["hasCycle"]:
        return "no cycles detected"
    return f"cycle detected ({' -> '.join(integrity['cyclePath'])})"


def edge_text(action: str, verb: str, document: dict[str, Any]) -> str:
    edge = document["dependency"]
    kind = edge["type"] if "type" in edge else f"{edge['fromType']} -> {edge['toType']}"
    return lines_text(
        f"premath dep {action}",
        [
            (verb, f"{edge['issueId']} -> {edge['dependsOnId']} ({kind})"),
            ("Path", document["issuesPath"]),
        ],
    )


def project_text(document: dict[str, Any]) -> str:
    return lines_text(
        "premath dep project",
        [
            ("View", document["view"]),
            ("Path", document["issuesPath"]),
            ("Count", document["count"]),
            ("Integrity", _integrity_text(document["integrity"])),
        ],
        [
            f"{i['issueId']} -> {i['dependsOnId']} ({i['type']}, role={i['role']}, "
            f"blocking={str(i['blocking']).lower()})"
            for i in document["items"]
        ],
    )


def diagnostics_text(document: dict[str, Any]) -> str:
    return lines_text(
        "premath dep diagnostics",
        [
            ("Path", document["issuesPath"]),
            ("Graph scope", document["graphScope"]),
            ("Integrity", _integrity_text(document["integrity"])),
        ],
    )


edge_type_option = click.option(
    "--type",
    "kind",
    type=dependency_type,
    metavar="TYPE",
    default="blocks",
    show_default=True,
    help=f"Dependency type: {TYPES_HELP}",
)


@click.group("dep", cls=StrictGroup)
def dep() -> None:
    """Dependencies between issues: add, remove, diagnose.

    Also replace an edge's type and project the edges; see specs/issue-memory.md.
    """


dep_add = operation_command(
    dep,
    DEP_ADD,
    click.argument("issue_id", metavar="ISSUE"),
    click.argument("target", metavar="DEPENDS_ON"),
    edge_type_option,
    click.option("--created-by", default="", help="Who added the edge"),
    issues_option,
    json_option,
    help_text="""Make ISSUE depend on DEPENDS_ON. Self-loops, duplicates and cycles are refused.

    \b
    premath dep add bd-2 bd-1 --type blocks --json
    """,
    text=lambda d: edge_text("add", "Added", d),
)
dep_remove = operation_command(
    dep,
    DEP_REMOVE,
    click.argument("issue_id", metavar="ISSUE"),
    click.argument("target", metavar="DEPENDS_ON"),
    edge_type_option,
    issues_option,
    json_option,
    help_text="""Remove the ISSUE -> DEPENDS_ON edge of one type.

    \b
    premath dep remove bd-2 bd-1 --type blocks --json
    """,
    text=lambda d: edge_text("remove", "Removed", d),
)
dep_replace = operation_command(
    dep,
    DEP_REPLACE,
    click.argument("issue_id", metavar="ISSUE"),
    click.argument("target", metavar="DEPENDS_ON"),
    click.option(
        "--from-type",
        type=dependency_type,
        metavar="TYPE",
        default="blocks",
        show_default=True,
        help=f"The edge's current type: {TYPES_HELP}",
    ),
    click.option(
        "--to-type", type=dependency_type, metavar="TYPE", required=True, help="The edge's new type"
    ),
    click.option("--created-by", default="", help="Who changed the edge (kept when blank)"),
    issues_option,
    json_option,
    help_text="""Change the type of the ISSUE -> DEPENDS_ON edge in place.

    \b
    premath dep replace bd-2 bd-1 --from-type blocks --to-type related --json
    """,
    text=lambda d: edge_text("replace", "Replaced", d),
)


@dep.command("project")
@click.option(
    "--view",
    type=click.Choice(EDGE_VIEWS),
    default="execution",
    show_default=True,
    help="Which edges to project",
)
@issues_option
@json_option
@pass_app
def dep_project(app: AppContext, view: EdgeView, issues: str) -> Reply:
    """List every edge with its role in one view. Also: cycle integrity over all issues.

    \b
    premath dep project --view execution --json
    """
    from premath.issues.documents import dep_project_document
    from premath.issues.memory import dep_project as project

    projection = project(issues, now=app.clock.now())
    document = dep_project_document(issues, view, projection.edges, projection.integrity)
    return Reply(document, text=project_text)


@dep.command("diagnostics")
@click.option(
    "--graph-scope",
    type=click.Choice(GRAPH_SCOPES),
    default="active",
    show_default=True,
    help="active: open and in_progress issues only",
)
@issues_option
@json_option
@pass_app
def dep_diagnostics(app: AppContext, graph_scope: GraphScope, issues: str) -> Reply:
    """Report the first dependency cycle, if any. Exit 0 even when one is found.

    \b
    premath dep diagnostics --graph-scope active --json
    """
    from premath.issues.documents import dep_diagnostics_document
    from premath.issues.memory import dep_diagnostics as diagnostics

    integrity = diagnostics(issues, now=app.clock.now(), scope=graph_scope)
    return Reply(dep_diagnostics_document(issues, graph_scope, integrity), text=diagnostics_text)
