"""`premath` command line: click groups, one module per group, loaded on first use.

Importing this package loads no click: the hot agent commands run through the fast path
(`cli/_fast.py`), and `cli`, the click root group, is built on first access.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys

from premath.cli._reply import LazyGroup

TYPE_CHECKING = False
if TYPE_CHECKING:
    from premath.cli._root import RootGroup

    cli: RootGroup
    from typing import Any

# Each group: where it lives, and its one-line help, so `premath --help` loads no group.
COMMAND_GROUPS: dict[str, LazyGroup] = {
    "harness-session": LazyGroup(
        "premath.cli.harness_session:harness_session",
        "Read and write the session handoff.",
        ("premath.cli.hot.harness_session",),
    ),
    "harness-feature": LazyGroup(
        "premath.cli.harness_feature:harness_feature",
        "Read, write and check the feature ledger.",
    ),
    "harness-trajectory": LazyGroup(
        "premath.cli.harness_trajectory:harness_trajectory",
        "Append to and query the step trajectory.",
        ("premath.cli.hot.harness_trajectory",),
    ),
    "harness-join-check": LazyGroup(
        "premath.cli.harness_join_check:harness_join_check",
        "Check that every tool call of a turn got its result.",
        ("premath.cli.hot.harness_join_check",),
    ),
    "demo": LazyGroup(
        "premath.cli.demo:demo",
        "Drain sample issues with two workers; show the KPI.",
    ),
    "issue": LazyGroup(
        "premath.cli.issue:issue",
        "Issue memory: add, list, claim and close issues.",
        ("premath.cli.hot.issue", "premath.cli.hot.issue_update"),
    ),
    "dep": LazyGroup(
        "premath.cli.dep:dep",
        "Dependencies between issues: add, remove, diagnose.",
    ),
    "harness": LazyGroup(
        "premath.cli.harness:harness",
        "The loop's hooks for an agent that is its own worker.",
    ),
    "harness-loop": LazyGroup(
        "premath.cli.harness_loop:harness_loop",
        "Run worker and coordinator loops over issues.",
    ),
    "harness-kpi": LazyGroup(
        "premath.cli.harness_kpi:harness_kpi",
        "Compute the throughput KPI from the trajectory.",
    ),
    "harness-policy": LazyGroup(
        "premath.cli.harness_policy:harness_policy",
        "Inspect the retry policy and what it decides.",
    ),
    "atif": LazyGroup(
        "premath.cli.atif:atif",
        "Export and validate ATIF agent trajectories.",
    ),
    "bench": LazyGroup(
        "premath.cli.bench:bench",
        "Run benchmark tasks headlessly (ATIF, summaries).",
    ),
    "experiment": LazyGroup(
        "premath.cli.experiment:experiment",
        "Run a harness under variants and compare them.",
    ),
    "run": LazyGroup(
        "premath.cli.run:run",
        "Run one task through a harness.",
    ),
    "schema": LazyGroup(
        "premath.cli.schema:schema", "Print the JSON Schema of KIND (always JSON)."
    ),
    "transport-dispatch": LazyGroup(
        "premath.cli.transport:transport_dispatch",
        "Dispatch one transport action.",
    ),
    "transport-check": LazyGroup(
        "premath.cli.transport:transport_check",
        "Check the transport action registry.",
    ),
    "mcp-serve": LazyGroup(
        "premath.cli.mcp_serve:mcp_serve",
        "Serve the issue tools over MCP (stdio or HTTP).",
    ),
    "instruction-check": LazyGroup(
        "premath.cli.instruction:instruction_check",
        "Validate an instruction envelope and its policy.",
    ),
    "instruction-witness": LazyGroup(
        "premath.cli.instruction:instruction_witness",
        "Build the witness of an instruction run.",
    ),
    "scheme-eval": LazyGroup(
        "premath.cli.scheme_eval:scheme_eval",
        "Run a program of host-action calls, allowlisted.",
    ),
    "instruction-run": LazyGroup(
        "premath.cli.instruction:instruction_run",
        "Run an instruction's checks and write its witness.",
    ),
    "observe-build": LazyGroup(
        "premath.cli.observe:observe_build",
        "Build the observation surface from CI witnesses.",
    ),
    "observe": LazyGroup(
        "premath.cli.observe:observe",
        "Query the observation surface (four modes).",
    ),
    "observe-serve": LazyGroup(
        "premath.cli.observe:observe_serve",
        "Serve the observation API and live dashboard.",
    ),
    "witness-key": LazyGroup(
        "premath.cli.witness_key:witness_key",
        "Show, rotate and retire the witness MAC keys.",
    ),
    "init": LazyGroup(
        "premath.cli.init:init",
        "Create the project's .premath/issues.jsonl.",
    ),
}

KEEPS_RUNNING = frozenset(
    {"harness-loop", "experiment", "bench", "run", "mcp-serve", "observe-serve"}
)
"""Commands and groups that run for long (loops, experiments, servers): the cyclic GC stays on."""


def __getattr__(name: str) -> Any:
    """`cli`, the click root group, built (and click imported) on first access."""
    if name != "cli":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from premath.cli._root import root_group

    group = globals()["cli"] = root_group(COMMAND_GROUPS)
    return group


def main() -> None:
    """Console entry point: once the exit point has written everything, leave at once.

    Interpreter teardown would only free what the command built (about 45 ms for a 100k-issue
    store); every file we write is already fsynced, so nothing is lost by skipping it. Tests
    call `cli.main` through CliRunner and keep the normal SystemExit.

    A command that answers and exits runs without the cyclic GC: it would only rescan the rows
    of a big store, which hold no cycles, again and again (a third of `issue ready` at 100k
    issues). Groups whose commands keep running (`KEEPS_RUNNING`) collect as usual.

    The hot commands first try the fast path, which parses their arguments without click
    (`cli/_fast.py`); anything it does not take for certain goes to click.
    """
    argv = sys.argv[1:]
    if not set(argv[:1]) & KEEPS_RUNNING:
        gc.disable()
    try:
        from premath.cli._fast import run_fast

        code = run_fast(argv, COMMAND_GROUPS)
        if code is None:
            from premath.cli import cli

            cli.main(argv)
        sys.exit(code)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
