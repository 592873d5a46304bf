"""`harness-trajectory append|query`: declarations, bodies and text.

`cli/harness_trajectory.py` builds their click commands from these declarations."""

from __future__ import annotations

from premath.cli._declaration import CHOICE, JSON, USIZE, command, option, path_param
from premath.cli._reply import AppContext, Reply

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

TRAJECTORY_PATH = ".premath/harness_trajectory.jsonl"
TRAJECTORY = path_param(TRAJECTORY_PATH, "Harness trajectory JSONL path", "--trajectory-path")


def append_text(document: dict[str, Any]) -> str:
    row = document["row"]
    return "\n".join(
        [
            "premath harness-trajectory append",
            f"  Step ID: {row['stepId']}",
            f"  Result Class: {row['resultClass']}",
            f"  Path: {document['path']}",
        ]
    )


def query_text(document: dict[str, Any]) -> str:
    lines = [
        "premath harness-trajectory query",
        f"  Path: {document['path']}",
        f"  Mode: {document['mode']}",
        f"  Count: {document['count']} (total={document['totalCount']}, "
        f"failed={document['failedCount']}, retry_needed={document['retryNeededCount']})",
    ]
    lines.extend(
        f"  - {row['stepId']} [{row['resultClass']}] {row['action']} ({row['finishedAt']})"
        for row in document["items"]
    )
    return "\n".join(lines)


@command(
    "harness-trajectory append",
    TRAJECTORY,
    option("--step-id", required=True, help="Deterministic step identifier"),
    option("--issue-id", help="Optional issue identifier linked to this step"),
    option("--action", required=True, help="Action label for this step (e.g. apply.patch)"),
    option("--result-class", required=True, help="Result class label for this step"),
    option(
        "--instruction-ref", "instruction_refs", multiple=True, help="Optional instruction refs"
    ),
    option("--witness-ref", "witness_refs", multiple=True, help="Witness refs"),
    option("--lineage-ref", "lineage_refs", multiple=True, help="Site lineage references"),
    option("--started-at", help="Optional started-at timestamp (RFC3339)"),
    option("--finished-at", help="Optional finished-at timestamp (RFC3339; default now)"),
    JSON,
    app=True,
    hot=True,
)
def harness_trajectory_append(app: AppContext, /, path: str, **fields: Any) -> Reply:
    """Append one step row to the trajectory. One whole line, under a lock.

    \b
    premath harness-trajectory append --step-id w1.bd-7.3 --action run.check \\
        --result-class completed --witness-ref artifacts/ciwitness/w1.json --json
    """
    from premath.record.trajectory import append_trajectory_row

    document = append_trajectory_row(
        path, now=app.clock.now(), lock_timeout=app.lock_timeout(), **fields
    )
    return Reply(document, text=append_text)


@command(
    "harness-trajectory query",
    TRAJECTORY,
    option(
        "--mode",
        kind=CHOICE,
        choices=("latest", "failed", "retry-needed"),
        default="latest",
        show_default=True,
        help="Projection mode",
    ),
    option("--limit", kind=USIZE, default=20, show_default=True, help="Maximum rows returned"),
    JSON,
    hot=True,
)
def harness_trajectory_query(path: str, mode: str, limit: int) -> Reply:
    """Show the latest, failed or retry-needed steps, newest first. Counts cover all rows.

    \b
    premath harness-trajectory query --mode failed --limit 20 --json
    """
    from premath.record.trajectory import query_trajectory

    return Reply(query_trajectory(path, mode, limit), text=query_text)  # type: ignore[arg-type]
