"""`premath` command line: click groups, one module per group, loaded on first use."""

import contextlib
import os
import sys

import click

from premath import __version__
from premath.cli._root import CONTEXT_SETTINGS, RootGroup

COMMAND_GROUPS = {
    "harness-session": "premath.cli.harness_session:harness_session",
    "harness-feature": "premath.cli.harness_feature:harness_feature",
    "harness-trajectory": "premath.cli.harness_trajectory:harness_trajectory",
    "harness-join-check": "premath.cli.harness_join_check:harness_join_check",
    "demo": "premath.cli.demo:demo",
    "issue": "premath.cli.issue:issue",
    "dep": "premath.cli.dep:dep",
    "harness": "premath.cli.harness:harness",
    "harness-loop": "premath.cli.harness_loop:harness_loop",
    "harness-kpi": "premath.cli.harness_kpi:harness_kpi",
    "harness-policy": "premath.cli.harness_policy:harness_policy",
    "atif": "premath.cli.atif:atif",
    "bench": "premath.cli.bench:bench",
    "experiment": "premath.cli.experiment:experiment",
    "run": "premath.cli.run:run",
    "schema": "premath.cli.schema:schema",
    "init": "premath.cli.init:init",
}


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
    """
    try:
        cli.main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
