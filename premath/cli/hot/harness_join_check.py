"""`harness-join-check`: declaration, body and text; `cli/harness_join_check` builds its click."""

from __future__ import annotations

from functools import partial

from premath.cli._declaration import JSON, command, option
from premath.cli._reply import Reply

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


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


@command(
    "harness-join-check",
    option("--input", "input_path", required=True, help="The turn, as JSON (specs/join-check.md)"),
    JSON,
    hot=True,
)
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
