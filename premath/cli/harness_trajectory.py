"""`premath harness-trajectory append|query`: the append-only step trajectory.

The bodies are hot (agents call them in loops): they live in `cli/hot/harness_trajectory.py`,
free of click; here are their click declarations.
"""

from __future__ import annotations

from typing import Any

import click

from premath.cli._options import json_option, path_option, stacked
from premath.cli._root import StrictGroup, pass_app
from premath.cli.hot import harness_trajectory as hot

TRAJECTORY_PATH = ".premath/harness_trajectory.jsonl"
trajectory_path_option = path_option(
    TRAJECTORY_PATH, "Harness trajectory JSONL path", "--trajectory-path"
)


class Usize(click.ParamType[int, Any]):
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


@click.group("harness-trajectory", cls=StrictGroup)
def harness_trajectory() -> None:
    """Append to and query the step trajectory.

    The trajectory (.premath/harness_trajectory.jsonl) records every step, append-only; see
    specs/harness-trajectory.md.
    """


harness_trajectory_append = stacked(
    harness_trajectory.command("append"),
    trajectory_path_option,
    click.option("--step-id", required=True, help="Deterministic step identifier"),
    click.option("--issue-id", help="Optional issue identifier linked to this step"),
    click.option("--action", required=True, help="Action label for this step (e.g. apply.patch)"),
    click.option("--result-class", required=True, help="Result class label for this step"),
    click.option(
        "--instruction-ref", "instruction_refs", multiple=True, help="Optional instruction refs"
    ),
    click.option("--witness-ref", "witness_refs", multiple=True, help="Witness refs"),
    click.option("--lineage-ref", "lineage_refs", multiple=True, help="Site lineage references"),
    click.option("--started-at", help="Optional started-at timestamp (RFC3339)"),
    click.option("--finished-at", help="Optional finished-at timestamp (RFC3339; default now)"),
    json_option,
    pass_app,
)(hot.harness_trajectory_append)

harness_trajectory_query = stacked(
    harness_trajectory.command("query"),
    trajectory_path_option,
    click.option(
        "--mode",
        type=click.Choice(["latest", "failed", "retry-needed"]),
        default="latest",
        show_default=True,
        help="Projection mode",
    ),
    click.option(
        "--limit",
        type=Usize(),
        default=20,
        show_default=True,
        help="Maximum rows returned",
    ),
    json_option,
)(hot.harness_trajectory_query)
