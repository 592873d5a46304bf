"""`premath issue ...`: the issue memory (`.premath/issues.jsonl`), its leases and checks.

The hot commands (ready, list, show, claim-next, update) are declared with their bodies in
`cli/hot/issue.py` and `cli/hot/issue_update.py` (whose declaration is the operation
catalogue's), free of click; their click commands are built here from the declarations.
"""

from __future__ import annotations

from collections.abc import Callable

import click

from premath.cli._issues import issues_option, lines_text
from premath.cli._options import (
    F,
    IntRange,
    Priority,
    click_command,
    json_option,
    project_path_option,
)
from premath.cli._root import AppContext, Reply, StrictGroup, pass_app
from premath.cli.hot import issue as hot
from premath.cli.hot import issue_update as hot_update
from premath.cli.hot.issue import claimed_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def added_text(document: dict[str, Any]) -> str:
    issue = document["issue"]
    return lines_text(
        "premath issue add",
        [("Added", f"{issue['id']} [{issue['status']}]"), ("Path", document["issuesPath"])],
    )


def blocked_text(document: dict[str, Any]) -> str:
    lines = [
        "premath issue blocked",
        f"  Path: {document['issuesPath']}",
        f"  Count: {document['count']}",
    ]
    for item in document["items"]:
        manual = str(item["manualBlocked"]).lower()
        lines.append(
            f"  - {item['id']} [{item['status']} p{item['priority']} manual_blocked={manual}] "
            f"{item['title']}"
        )
        for blocker in item["blockers"]:
            status = "missing" if blocker["blockerStatus"] is None else blocker["blockerStatus"]
            lines.append(
                f"    blocker: {blocker['dependsOnId']} (type={blocker['type']}, "
                f"status={status}, created_by={blocker['createdBy']})"
            )
    return "\n".join(lines)


def check_text(document: dict[str, Any]) -> str:
    summary = document["summary"]
    verdict = "OK" if document["result"] == "accepted" else "FAIL"
    lines = [
        f"[issue-graph] {verdict} (issues={summary['issueCount']}, "
        f"errors={summary['errorCount']}, warnings={summary['warningCount']})"
    ]
    lines.extend(f"  - {f['issueId']} {f['class']} ({f['message']})" for f in document["errors"])
    lines.extend(
        f"  - WARN {f['issueId']} {f['class']} ({f['message']})" for f in document["warnings"]
    )
    return "\n".join(lines)


def lease_text(action: str, verb: str, document: dict[str, Any]) -> str:
    issue = document["issue"]
    rows: list[tuple[str, Any]] = [(verb, f"{issue['id']} [{issue['status']}]")]
    if issue["lease"] is not None:
        lease = issue["lease"]
        rows.append(
            ("Lease", f"{lease['leaseId']} (owner {lease['owner']}, expires {lease['expiresAt']})")
        )
    rows.append(("Path", document["issuesPath"]))
    return lines_text(f"premath issue {action}", rows)


def projection_text(document: dict[str, Any]) -> str:
    return lines_text(
        "premath issue lease-projection",
        [
            ("Path", document["issuesPath"]),
            ("Checked at", document["checkedAt"]),
            ("Stale", f"{document['staleCount']} {' '.join(document['staleIssueIds'])}".rstrip()),
            (
                "Contended",
                f"{document['contendedCount']} {' '.join(document['contendedIssueIds'])}".rstrip(),
            ),
        ],
    )


def discovered_text(document: dict[str, Any]) -> str:
    issue, edge = document["issue"], document["dependency"]
    return lines_text(
        "premath issue discover",
        [
            ("Added", f"{issue['id']} [{issue['status']}]"),
            ("Linked", f"{edge['issueId']} -> {edge['dependsOnId']} ({edge['type']})"),
            ("Path", document["issuesPath"]),
        ],
    )


@click.group("issue", cls=StrictGroup)
def issue() -> None:
    """Issue memory: add, list, claim and close issues.

    The store is .premath/issues.jsonl; see specs/issue-memory.md.
    """


def new_issue_options(*, status: bool) -> Callable[[F], F]:
    """The fields of a new issue (`premath.issues.lifecycle.NewIssue`) as options."""
    options = [
        click.option("--id", "issue_id", help="Issue id (default: the smallest unused bd-N)"),
        click.option("--description", default="", help="Issue description"),
        click.option("--status", default="open", show_default=True, help="Issue status"),
        click.option(
            "--priority",
            type=Priority(),
            default=2,
            show_default=True,
            help="Priority: a whole number, lower is more urgent (0 is the highest)",
        ),
        click.option(
            "--type", "issue_type", default="task", show_default=True, help="epic or task"
        ),
        click.option("--assignee", default="", help="Assignee"),
        click.option("--owner", default="", help="Owner"),
    ]
    if not status:
        del options[2]

    def decorate(command: F) -> F:
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


@issue.command("add")
@click.argument("title")
@new_issue_options(status=True)
@issues_option
@json_option
@pass_app
def issue_add(app: AppContext, /, title: str, issues: str, **fields: Any) -> Reply:
    """Add an issue (creates the issues file when missing).

    \b
    premath issue add "Fix it" \\
        --description $'Acceptance:\\n- parses\\nVerification: `pytest -q`'
    """
    from premath.issues.check import new_issue_warnings
    from premath.issues.documents import issue_document
    from premath.issues.lifecycle import input_warnings
    from premath.issues.memory import add_issue

    row = add_issue(issues, title, now=app.clock.now(), timeout_s=app.lock_timeout(), **fields)
    warnings = input_warnings(title=title, status=fields["status"])
    warnings += new_issue_warnings(fields["description"], fields["status"])
    return Reply(issue_document("issue.add", issues, row), text=added_text, warnings=warnings)


issue_list = click_command(hot.issue_list, issue)

issue_ready = click_command(hot.issue_ready, issue)


@issue.command("blocked")
@issues_option
@json_option
@pass_app
def issue_blocked(app: AppContext, issues: str) -> Reply:
    """List issues that are blocked, by hand or by a blocker.

    \b
    premath issue blocked --json
    """
    from premath.issues.documents import blocked_document
    from premath.issues.memory import blocked

    return Reply(blocked_document(issues, blocked(issues, now=app.clock.now())), text=blocked_text)


@issue.command("check")
@click.option(
    "--note-warn-threshold",
    type=IntRange(min=0),
    default=2000,
    show_default=True,
    help="Warn when an issue's notes are longer than this many characters",
)
@click.option(
    "--compactness",
    is_flag=True,
    help="Also find redundant `blocks` edges (to closed issues, or implied by another edge); "
    "any finding exits 1 (what tools/ci/check_issue_graph.py runs)",
)
@issues_option
@json_option
@pass_app
def issue_check(app: AppContext, note_warn_threshold: int, compactness: bool, issues: str) -> Reply:
    """Check every active issue's acceptance and verification. Exit 1 when rejected.

    \b
    premath issue check --json
    premath issue check --compactness
    """
    from premath.issues.documents import check_document
    from premath.issues.memory import check, read_store

    report = check(issues, now=app.clock.now(), note_warn_threshold=note_warn_threshold)
    document = check_document(issues, report)
    if not compactness:
        return Reply(document, text=check_text, exit_code=0 if report.accepted else 1)
    from premath.issues.compactness import compactness_findings, compactness_lines

    findings = compactness_findings(read_store(issues, app.clock.now()))
    document["compactness"] = [finding.to_document() for finding in findings]
    exit_code = 0 if report.accepted and not findings else 1
    return Reply(
        document,
        text=lambda d: "\n".join([check_text(d), *compactness_lines(findings)]),
        exit_code=exit_code,
    )


issue_show = click_command(hot.issue_show, issue)

issue_update = click_command(hot_update.issue_update, issue)


@issue.command("claim")
@click.argument("issue_id", metavar="ID")
@click.option("--assignee", required=True, help="Who takes the issue")
@issues_option
@json_option
@pass_app
def issue_claim(app: AppContext, issue_id: str, assignee: str, issues: str) -> Reply:
    """Claim one issue with a lease (TTL 3600 s). Readiness is not checked.

    \b
    premath issue claim bd-1 --assignee w1 --json
    """
    from premath.issues.documents import claim_document
    from premath.issues.memory import claim

    row = claim(issues, issue_id, assignee, now=app.clock.now(), timeout_s=app.lock_timeout())
    return Reply(claim_document(issues, row), text=lambda d: claimed_text("claim", d))


issue_claim_next = click_command(hot.issue_claim_next, issue)


@issue.command("lease-renew")
@click.argument("issue_id", metavar="ID")
@click.option("--assignee", required=True, help="The lease holder")
@click.option("--lease-id", required=True, help="The lease id being renewed")
@click.option("--lease-ttl-seconds", type=int, help="New TTL from now, 30..86400 (default 3600)")
@click.option("--lease-expires-at", help="New expiry as an RFC3339 time in the future")
@issues_option
@json_option
@pass_app
def issue_lease_renew(
    app: AppContext,
    issue_id: str,
    assignee: str,
    lease_id: str,
    lease_ttl_seconds: int | None,
    lease_expires_at: str | None,
    issues: str,
) -> Reply:
    """Extend your active lease on an issue. Only its holder may.

    \b
    premath issue lease-renew bd-1 --assignee w1 --lease-id lease1_bd-1_w1 --json
    """
    from premath.issues.documents import lease_change_document
    from premath.issues.memory import renew_lease

    change = renew_lease(
        issues,
        issue_id,
        assignee,
        lease_id,
        now=app.clock.now(),
        timeout_s=app.lock_timeout(),
        ttl_seconds=lease_ttl_seconds,
        expires_at=lease_expires_at,
    )
    document = lease_change_document("issue.lease_renew", issues, change)
    return Reply(document, text=lambda d: lease_text("lease-renew", "Renewed", d))


@issue.command("lease-release")
@click.argument("issue_id", metavar="ID")
@click.option("--assignee", required=True, help="The lease holder")
@click.option("--lease-id", help="The lease id being released (checked when given)")
@issues_option
@json_option
@pass_app
def issue_lease_release(
    app: AppContext, issue_id: str, assignee: str, lease_id: str | None, issues: str
) -> Reply:
    """Give your active lease up. The issue is open and unassigned again.

    \b
    premath issue lease-release bd-1 --assignee w1 --json
    """
    from premath.issues.documents import lease_change_document
    from premath.issues.memory import release_lease

    change = release_lease(
        issues, issue_id, assignee, lease_id, now=app.clock.now(), timeout_s=app.lock_timeout()
    )
    document = lease_change_document("issue.lease_release", issues, change)
    return Reply(document, text=lambda d: lease_text("lease-release", "Released", d))


@issue.command("lease-projection")
@issues_option
@json_option
@pass_app
def issue_lease_projection(app: AppContext, issues: str) -> Reply:
    """List stale and contended leases.

    \b
    premath issue lease-projection --json
    """
    from premath.issues.documents import lease_projection_document
    from premath.issues.memory import lease_projection

    projection = lease_projection(issues, now=app.clock.now())
    return Reply(lease_projection_document(issues, projection), text=projection_text)


@issue.command("discover")
@click.argument("parent_id", metavar="PARENT")
@click.argument("title")
@new_issue_options(status=False)
@issues_option
@json_option
@pass_app
def issue_discover(
    app: AppContext, /, parent_id: str, title: str, issues: str, **fields: Any
) -> Reply:
    """Add an issue found while working on PARENT. It is linked to PARENT (discovered-from).

    \b
    premath issue discover bd-1 "Flaky fixture" --json
    """
    from premath.issues.check import new_issue_warnings
    from premath.issues.documents import discovered_document
    from premath.issues.memory import discover_issue

    row = discover_issue(
        issues, parent_id, title, now=app.clock.now(), timeout_s=app.lock_timeout(), **fields
    )
    return Reply(
        discovered_document(issues, row, parent_id),
        text=discovered_text,
        warnings=new_issue_warnings(fields["description"], "open"),
    )


@issue.command("migrate-events")
@issues_option
@project_path_option("--events", default=".premath/memory/events.jsonl", help_text="Event log path")
@json_option
@pass_app
def issue_migrate_events(app: AppContext, /, issues: str, events: str) -> Reply:
    """Write the store as an event log and check its replay. The log (issue.event.v1) must
    replay to the same store.

    \b
    premath issue migrate-events --json
    """
    from premath.issues.event_documents import migrate_document, migrate_text
    from premath.issues.events import migrate_events

    result = migrate_events(issues, events, now=app.clock.now())
    return Reply(migrate_document(result), text=lambda _: migrate_text(result))


@issue.command("replay-events")
@project_path_option("--events", default=".premath/memory/events.jsonl", help_text="Event log path")
@issues_option
@click.option("--cache", help="Replay cache path (default: replay-cache.json beside --issues)")
@json_option
@pass_app
def issue_replay_events(app: AppContext, /, events: str, issues: str, cache: str | None) -> Reply:
    """Rebuild or verify the issues file from the event log. It is rewritten only when it
    differs.

    \b
    premath issue replay-events --json
    """
    from premath.issues.event_documents import replay_document, replay_text
    from premath.issues.events import replay_events

    result = replay_events(events, issues, cache, now=app.clock.now(), timeout_s=app.lock_timeout())
    return Reply(replay_document(result), text=lambda _: replay_text(result))


@issue.command("backend-status")
@issues_option
@click.option("--repo", default=".", show_default=True, help="Repository root (for jj)")
@project_path_option(
    "--projection", default=".premath/surreal_issue_cache.json", help_text="Query projection path"
)
@json_option
@pass_app
def issue_backend_status(app: AppContext, /, issues: str, repo: str, projection: str) -> Reply:
    """Report the issue store, its query cache and jj state. Read-only, exit 0.

    \b
    premath issue backend-status --json
    """
    from premath.issues.backend_status import backend_status
    from premath.issues.event_documents import backend_status_document, backend_status_text

    status = backend_status(issues, repo, projection, now=app.clock.now())
    return Reply(backend_status_document(status), text=lambda _: backend_status_text(status))
