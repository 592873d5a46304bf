"""`harness-trajectory append|query`: bodies and text (declared in `cli/harness_trajectory.py`)."""

from premath.cli._reply import AppContext, Reply
from premath.lean_typing import Any


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


def harness_trajectory_query(path: str, mode: str, limit: int) -> Reply:
    """Show the latest, failed or retry-needed steps, newest first. Counts cover all rows.

    \b
    premath harness-trajectory query --mode failed --limit 20 --json
    """
    from premath.record.trajectory import query_trajectory

    return Reply(query_trajectory(path, mode, limit), text=query_text)  # type: ignore[arg-type]
