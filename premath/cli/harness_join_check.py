"""`premath harness-join-check`: the tool-calling turn's JoinClosed gate (specs/join-check.md)."""

from functools import partial
from typing import Any

import click

from premath.cli._options import json_option
from premath.cli._root import CONTEXT_SETTINGS, Reply, StrictCommand


def join_check_text(document: dict[str, Any], input_path: str) -> str:
    classes = document["failureClasses"]
    return "\n".join(
        [
            "premath harness-join-check",
            f"  Input: {input_path}",
            f"  Result: {document['result']}",
            f"  Failure Classes: {len(classes)}",
            *(f"  - {failure}" for failure in classes),
        ]
    )


@click.command("harness-join-check", cls=StrictCommand, context_settings=CONTEXT_SETTINGS)
@click.option(
    "--input", "input_path", required=True, help="The turn, as JSON (specs/join-check.md)"
)
@json_option
def harness_join_check(input_path: str) -> Reply:
    """Check that every tool call of a turn got its result. The input describes one
    tool-calling turn: the calls, their results and how the turn ended; the gate accepts it only
    when every call was answered and nothing was cut off (specs/join-check.md).

    A rejected check is data: exit 0 with `result: rejected` and its failure classes.

    \b
    premath harness-join-check --input turn.json --json
    """
    from premath.harness.join.check import run_join_check  # lazy: start-up budget

    return Reply(run_join_check(input_path), text=partial(join_check_text, input_path=input_path))
