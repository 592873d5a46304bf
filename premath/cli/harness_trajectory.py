"""`premath harness-trajectory append|query`: the append-only step trajectory."""

from typing import TYPE_CHECKING, Any

import click

from premath.cli._options import json_option, path_option
from premath.cli._root import AppContext, Reply, StrictGroup, pass_app

TRAJECTORY_PATH = ".premath/harness_trajectory.jsonl"
trajectory_path_option = path_option(
    TRAJECTORY_PATH, "Harness trajectory JSONL path", "--trajectory-path"
)

if TYPE_CHECKING:  # generic from click 8.5 on; the runtime class is not subscriptable before
    _IntType = click.ParamType[int, Any]
else:
    _IntType = click.ParamType


class Usize(_IntType):
    """clap's `usize`: ASCII digits (an optional `+`), at most 2^64-1; `1_000`, ` 5`, `٣` refused.

    click's INT accepts what Python's `int()` does (underscores, spaces, other scripts' digits).
    """

    name = "integer"
    MAX = 2**64 - 1

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        digits = value[1:] if value.startswith("+") else value
        valid = digits.isascii() and digits.isdigit() and len(digits.lstrip("0")) <= 20
        if not valid or int(digits) > self.MAX:
            self.fail(f"{value!r} is not a non-negative integer (at most {self.MAX})", param, ctx)
        return int(digits)


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


@click.group("harness-trajectory", cls=StrictGroup)
def harness_trajectory() -> None:
    """Append to and query the step trajectory.

    The trajectory (.premath/harness_trajectory.jsonl) records every step, append-only; see
    specs/harness-trajectory.md.
    """


@harness_trajectory.command("append")
@trajectory_path_option
@click.option("--step-id", required=True, help="Deterministic step identifier")
@click.option("--issue-id", help="Optional issue identifier linked to this step")
@click.option("--action", required=True, help="Action label for this step (e.g. apply.patch)")
@click.option("--result-class", required=True, help="Result class label for this step")
@click.option(
    "--instruction-ref", "instruction_refs", multiple=True, help="Optional instruction refs"
)
@click.option("--witness-ref", "witness_refs", multiple=True, help="Witness refs")
@click.option("--lineage-ref", "lineage_refs", multiple=True, help="Site lineage references")
@click.option("--started-at", help="Optional started-at timestamp (RFC3339)")
@click.option("--finished-at", help="Optional finished-at timestamp (RFC3339; default now)")
@json_option
@pass_app
def harness_trajectory_append(app: AppContext, /, path: str, **fields: Any) -> Reply:
    """Append one step row to the trajectory. One whole line, under a lock.

    \b
    premath harness-trajectory append --step-id w1.bd-7.3 --action run.check \\
        --result-class completed --witness-ref artifacts/ciwitness/w1.json --json
    """
    from premath.harness.trajectory import append_trajectory_row

    document = append_trajectory_row(
        path, now=app.clock.now(), lock_timeout=app.lock_timeout(), **fields
    )
    return Reply(document, text=append_text)


@harness_trajectory.command("query")
@trajectory_path_option
@click.option(
    "--mode",
    type=click.Choice(["latest", "failed", "retry-needed"]),
    default="latest",
    show_default=True,
    help="Projection mode",
)
@click.option(
    "--limit",
    type=Usize(),
    default=20,
    show_default=True,
    help="Maximum rows returned",
)
@json_option
def harness_trajectory_query(path: str, mode: str, limit: int) -> Reply:
    """Show the latest, failed or retry-needed steps, newest first. Counts cover all rows.

    \b
    premath harness-trajectory query --mode failed --limit 20 --json
    """
    from premath.harness.trajectory import query_trajectory

    return Reply(query_trajectory(path, mode, limit), text=query_text)  # type: ignore[arg-type]
