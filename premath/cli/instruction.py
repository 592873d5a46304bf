"""`premath instruction-check` and `premath instruction-witness` (agent-surface.md §4).

Input errors exit 2 with `<failureClass>: <message>`; a reject decision or a rejected witness
is data (exit 0).
"""

import click

from premath.cli._options import json_option
from premath.cli._root import CONTEXT_SETTINGS, Reply, StrictCommand


@click.command("instruction-check", cls=StrictCommand, context_settings=CONTEXT_SETTINGS)
@click.option("--instruction", required=True, help="Instruction envelope JSON path")
@click.option("--repo-root", default=".", show_default=True, help="Repository root")
@json_option
def instruction_check(instruction: str, repo_root: str) -> Reply:
    """Validate an instruction envelope: schema, policy binding, classification, proposal."""
    from functools import partial

    from premath.harness.instruction.envelope import check_envelope, check_text

    path, document = check_envelope(instruction, repo_root)
    return Reply(document, text=partial(check_text, path), sorted_keys=False)


@click.command("instruction-witness", cls=StrictCommand, context_settings=CONTEXT_SETTINGS)
@click.option("--instruction", required=True, help="Instruction envelope JSON path")
@click.option("--runtime", required=True, help="Runtime result JSON path")
@click.option("--pre-execution-failure-class", help="Record a reject before any check ran")
@click.option("--pre-execution-reason", help="Why the instruction was rejected before running")
@click.option("--repo-root", default=".", show_default=True, help="Repository root")
@json_option
def instruction_witness(
    instruction: str,
    runtime: str,
    pre_execution_failure_class: str | None,
    pre_execution_reason: str | None,
    repo_root: str,
) -> Reply:
    """Build the `ci.instruction.v1` witness of an instruction run."""
    from premath.harness.instruction.witness import instruction_witness as build, witness_text

    witness = build(
        instruction, runtime, repo_root, pre_execution_failure_class, pre_execution_reason
    )
    return Reply(witness.to_document(), text=witness_text, sorted_keys=False)
