"""`premath` command line: click groups, one module per group, loaded on first use."""

import contextlib
import gc
import os
import sys

import click

from premath import __version__
from premath.cli._root import CONTEXT_SETTINGS, LazyGroup, RootGroup

# Each group: where it lives, and its one-line help, so `premath --help` loads no group.
COMMAND_GROUPS: dict[str, LazyGroup] = {
    "harness-session": LazyGroup(
        "premath.cli.harness_session:harness_session",
        "Manage Tusk harness-session handoff artifacts",
    ),
    "harness-feature": LazyGroup(
        "premath.cli.harness_feature:harness_feature",
        "Manage Tusk harness feature-ledger artifacts",
    ),
    "harness-trajectory": LazyGroup(
        "premath.cli.harness_trajectory:harness_trajectory",
        "Manage append-only Tusk harness step trajectory rows",
    ),
    "harness-join-check": LazyGroup(
        "premath.cli.harness_join_check:harness_join_check",
        "Evaluate deterministic ToolUse/JoinClosed closure state from normalized evidence",
    ),
    "demo": LazyGroup(
        "premath.cli.demo:demo",
        "Drain built-in sample issues with two parallel workers in a temp folder; show the KPI.",
    ),
    "issue": LazyGroup(
        "premath.cli.issue:issue",
        "Issue memory: add, list, claim and close work items (.premath/issues.jsonl)",
    ),
    "dep": LazyGroup(
        "premath.cli.dep:dep",
        "Dependencies between issues: add, remove, replace, project, diagnose cycles",
    ),
    "harness": LazyGroup(
        "premath.cli.harness:harness",
        "Boot, step and stop hooks of the harness loop, for agents that are their own worker.",
    ),
    "harness-loop": LazyGroup(
        "premath.cli.harness_loop:harness_loop",
        "Run worker and coordinator loops that take issues from ready to closed, gated.",
    ),
    "harness-kpi": LazyGroup(
        "premath.cli.harness_kpi:harness_kpi",
        "Compute the throughput KPI: completed issues/day per active worker times gate pass rate.",
    ),
    "harness-policy": LazyGroup(
        "premath.cli.harness_policy:harness_policy",
        "Inspect the harness retry policy: rules, decisions and failure classification.",
    ),
    "atif": LazyGroup(
        "premath.cli.atif:atif",
        "Export and validate ATIF trajectories (Agent Trajectory Interchange Format)",
    ),
    "bench": LazyGroup(
        "premath.cli.bench:bench",
        "Run benchmark tasks headlessly and leave comparable artifacts (ATIF, summary, metadata)",
    ),
    "experiment": LazyGroup(
        "premath.cli.experiment:experiment",
        "Run a harness over a dataset under variants, resume runs, compare variants",
    ),
    "run": LazyGroup(
        "premath.cli.run:run",
        "Run one task through a harness: `{command} {args} <task.json> <result.json>`.",
    ),
    "schema": LazyGroup(
        "premath.cli.schema:schema", "Print the JSON Schema of KIND (always JSON)."
    ),
    "transport-dispatch": LazyGroup(
        "premath.cli.transport:transport_dispatch",
        "Dispatch one transport action; a rejection is an envelope (exit 0), not an error.",
    ),
    "transport-check": LazyGroup(
        "premath.cli.transport:transport_check",
        "Check the transport action registry (routes and digests); exit 1 when rejected.",
    ),
    "mcp-serve": LazyGroup(
        "premath.cli.mcp_serve:mcp_serve",
        "Serve the issue and dependency tools over MCP (stdio, newline-delimited JSON-RPC).",
    ),
    "instruction-check": LazyGroup(
        "premath.cli.instruction:instruction_check",
        "Validate an instruction envelope: schema, policy binding, classification, proposal.",
    ),
    "instruction-witness": LazyGroup(
        "premath.cli.instruction:instruction_witness",
        "Build the `ci.instruction.v1` witness of an instruction run.",
    ),
    "scheme-eval": LazyGroup(
        "premath.cli.scheme_eval:scheme_eval",
        "Evaluate a program of host-action calls under the control-plane allowlist.",
    ),
    "instruction-run": LazyGroup(
        "premath.cli.instruction:instruction_run",
        "Check an envelope, run its checks, write artifacts/ciwitness/<id>.json.",
    ),
    "init": LazyGroup(
        "premath.cli.init:init",
        "Create ROOT/.premath/issues.jsonl, importing ROOT/.beads/issues.jsonl if any.",
    ),
}

KEEPS_RUNNING = frozenset({"harness-loop", "experiment", "bench", "run", "mcp-serve"})
"""Commands and groups that run for long (loops, experiments, servers): the cyclic GC stays on."""


@click.group(
    cls=RootGroup,
    lazy_subcommands=COMMAND_GROUPS,
    context_settings=CONTEXT_SETTINGS,
    no_args_is_help=True,
)
@click.version_option(__version__, "--version", "-V", prog_name="premath")
def cli() -> None:
    """Harness runtime for coding agents: artifacts, issue memory, gated loops, harness runs."""


def main() -> None:
    """Console entry point: once the exit point has written everything, leave at once.

    Interpreter teardown would only free what the command built (about 45 ms for a 100k-issue
    store); every file we write is already fsynced, so nothing is lost by skipping it. Tests
    call `cli.main` through CliRunner and keep the normal SystemExit.

    A command that answers and exits runs without the cyclic GC: it would only rescan the rows
    of a big store, which hold no cycles, again and again (a third of `issue ready` at 100k
    issues). Groups whose commands keep running (`KEEPS_RUNNING`) collect as usual.
    """
    if not set(sys.argv[1:2]) & KEEPS_RUNNING:
        gc.disable()
    try:
        cli.main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
