"""`premath demo`: a coordinator with two workers on built-in sample issues, then the KPI."""

import click

from premath.cli._options import json_option
from premath.cli._root import AppContext, Reply, StrictCommand, pass_app


@click.command("demo", cls=StrictCommand)
@click.option("-v", "--verbose", is_flag=True, help="Show every progress line, policy lines too")
@click.option(
    "--keep",
    metavar="DIR",
    help="Run in DIR (new or empty) and keep it, to look at .premath/ afterwards",
)
@json_option
@pass_app
def demo(app: AppContext, verbose: bool, keep: str | None) -> Reply:
    """Drain built-in sample issues with two parallel workers in a temp folder; show the KPI.

    \b
    premath demo --keep /tmp/premath-demo -v
    """
    from premath.cli.harness_loop import worker_command
    from premath.harness.demo import demo_text, run_demo

    document = run_demo(app.clock.now, app.lock_timeout(), worker_command, keep=keep)
    exit_code = 0 if document["coordinator"]["exitCode"] == 0 else 1
    return Reply(document, text=lambda d: demo_text(d, verbose), exit_code=exit_code)
