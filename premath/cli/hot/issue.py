"""`issue ready|list|show|claim-next`: declarations, bodies and text.

`cli/issue.py` builds their click commands from these declarations (`issue update`'s is the
operation catalogue's: `cli/hot/issue_update.py`)."""

from __future__ import annotations

from premath.cli._declaration import FLAG, INT, ISSUES, JSON, argument, command, option
from premath.cli._reply import AppContext, Reply
from premath.cli._text import lines_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def list_text(document: dict[str, Any]) -> str:
    return lines_text(
        "premath issue list",
        [("Path", document["issuesPath"]), ("Count", document["count"])],
        [f"{i['id']} [{i['status']} p{i['priority']}] {i['title']}" for i in document["items"]],
    )


def ready_text(document: dict[str, Any]) -> str:
    return lines_text(
        "premath issue ready",
        [("Path", document["issuesPath"]), ("Count", document["count"])],
        [
            f"{i['id']} [p{i['priority']}] {i['title']}"
            + ("  (escalation: for a person; claim-next skips it)" if i.get("escalation") else "")
            for i in document["items"]
        ],
    )


def claimed_text(action: str, document: dict[str, Any]) -> str:
    issue = document["issue"]
    claimed = (
        "none (no ready/open issue)"
        if issue is None
        else f"{issue['id']} -> {issue['assignee']} [{issue['status']}]"
    )
    return lines_text(
        f"premath issue {action}", [("Claimed", claimed), ("Path", document["issuesPath"])]
    )


def show_text(document: dict[str, Any]) -> str:
    issue = document["issue"]
    lease = issue["lease"]
    rows: list[tuple[str, Any]] = [
        ("Issue", f"{issue['id']} [{issue['status']} p{issue['priority']} {issue['issueType']}]"),
        ("Title", issue["title"]),
        ("Assignee", issue["assignee"] or "-"),
        (
            "Lease",
            "none"
            if lease is None
            else f"{lease['leaseId']} (owner {lease['owner']}, {lease['state']}, "
            f"expires {lease['expiresAt']})",
        ),
        ("Path", document["issuesPath"]),
    ]
    items = [
        f"depends on {dep['dependsOnId']} ({dep['type']}, "
        f"{dep['status'] if dep['status'] is not None else 'missing'})"
        for dep in issue["dependencies"]
    ]
    text = lines_text("premath issue show", rows, items)
    for label, key in (
        ("Description", "description"),
        ("Acceptance criteria", "acceptanceCriteria"),
        ("Notes", "notes"),
    ):
        if issue[key]:
            text += f"\n{label}:\n{issue[key].rstrip()}"
    return text


@command(
    "issue list",
    option("--status", help="Only issues with exactly this status"),
    option("--assignee", help="Only issues with exactly this assignee"),
    ISSUES,
    JSON,
    app=True,
    hot=True,
)
def issue_list(app: AppContext, status: str | None, assignee: str | None, issues: str) -> Reply:
    """List issues in the order claim-next takes them. Priority first, then the id in natural
    order (bd-9 before bd-10); --json items show each lease.

    \b
    premath issue list --status open --json
    """
    from premath.issues.documents import list_document
    from premath.issues.memory import list_issues
    from premath.timefmt import epoch_nanos

    now = app.clock.now()
    rows = list_issues(issues, now=now, status=status, assignee=assignee)
    return Reply(list_document(issues, rows, epoch_nanos(now)), text=list_text)


@command("issue ready", ISSUES, JSON, app=True, hot=True)
def issue_ready(app: AppContext, issues: str) -> Reply:
    """List open issues whose blockers are all closed. In the order claim-next takes them.

    \b
    premath issue ready --json
    """
    from premath.issues.documents import ready_document
    from premath.issues.memory import ready

    return Reply(ready_document(issues, ready(issues, now=app.clock.now())), text=ready_text)


@command("issue show", argument("issue_id", metavar="ID"), ISSUES, JSON, app=True, hot=True)
def issue_show(app: AppContext, issue_id: str, issues: str) -> Reply:
    """Show one issue whole. Description, notes, dependencies with their states, lease.

    \b
    premath issue show bd-1 --json
    """
    from premath.issues.memory import read_store
    from premath.issues.show import show_document

    now = app.clock.now()
    return Reply(show_document(issues, read_store(issues, now), issue_id, now), text=show_text)


@command(
    "issue claim-next",
    option("--assignee", required=True, help="Who takes the issue"),
    option("--lease-id", help="Lease id (default: lease1_<issue>_<assignee>)"),
    option("--lease-ttl-seconds", kind=INT, help="Lease TTL in seconds, 30..86400 (default 3600)"),
    option(
        "--include-escalations",
        kind=FLAG,
        help="Also take [HarnessEscalation] issues, which are left to people by default",
    ),
    ISSUES,
    JSON,
    app=True,
    hot=True,
)
def issue_claim_next(
    app: AppContext,
    assignee: str,
    lease_id: str | None,
    lease_ttl_seconds: int | None,
    include_escalations: bool,
    issues: str,
) -> Reply:
    """Claim the next ready issue: by priority, then id order. The lowest priority number
    first, then the id in natural order (bd-2 before bd-10).

    \b
    Also reclaims an in_progress issue whose lease expired (a dead worker's).
    Escalations ([HarnessEscalation] issues) are left to people unless
    --include-escalations.

    \b
    premath issue claim-next --assignee w1 --json
    """
    from premath.issues.documents import claim_next_document
    from premath.issues.memory import claim_next

    row = claim_next(
        issues,
        assignee,
        now=app.clock.now(),
        timeout_s=app.lock_timeout(),
        lease_id=lease_id,
        ttl_seconds=lease_ttl_seconds,
        include_escalations=include_escalations,
    )
    return Reply(claim_next_document(issues, row), text=lambda d: claimed_text("claim-next", d))
