"""`premath demo`: a coordinator with two workers on built-in sample issues, then the KPI."""

from __future__ import annotations

import click

from premath.cli._options import json_option
from premath.cli._root import AppContext, Reply, StrictCommand, pass_app


@click.command("demo", cls=StrictCommand)
@click.option(
    "-v", "--verbose", is_flag=True, help="Show every progress line, the workers' policy too"
)
@click.option(
    "--keep",
    metavar="DIR",
    help="Run in DIR (new or empty) and keep it, to look at .premath/ afterwards",
)
@json_option
@pass_app
def demo(app: AppContext, verbose: bool, keep: str | None) -> Reply:
    """Drain sample issues with two workers; show the KPI. Built-in sample issues, two
    parallel workers, in a temporary folder (or --keep DIR).

    \b
    premath demo --keep /tmp/premath-demo -v
    """
    from premath.cli.harness_loop import verbose_worker_command, worker_command
    from premath.harness.demo import demo_text, run_demo

    command = verbose_worker_command if verbose else worker_command
    document = run_demo(app.clock.now, app.lock_timeout(), command, keep=keep)
    exit_code = 0 if document["coordinator"]["exitCode"] == 0 else 1
    return Reply(document, text=lambda d: demo_text(d, verbose), exit_code=exit_code)
