"""`premath dep ...`: dependency edges between issues, their views and cycle diagnostics."""

from __future__ import annotations

import click

from premath.cli._issues import issues_option, lines_text
from premath.cli._operations import cli_command
from premath.cli._options import click_command, json_option
from premath.cli._root import AppContext, Reply, StrictGroup, pass_app
from premath.models.vocabulary import EDGE_VIEWS, GRAPH_SCOPES
from premath.ops.catalogue import DEP_ADD, DEP_REMOVE, DEP_REPLACE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.models.vocabulary import EdgeView, GraphScope


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


@click.group("dep", cls=StrictGroup)
def dep() -> None:
    """Dependencies between issues: add, remove, diagnose.

    Also replace an edge's type and project the edges; see specs/issue-memory.md.
    """


dep_add = click_command(cli_command(DEP_ADD, text=lambda d: edge_text("add", "Added", d)), dep)
dep_remove = click_command(
    cli_command(DEP_REMOVE, text=lambda d: edge_text("remove", "Removed", d)), dep
)
dep_replace = click_command(
    cli_command(DEP_REPLACE, text=lambda d: edge_text("replace", "Replaced", d)), dep
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
