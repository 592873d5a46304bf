"""`premath demo`: a coordinator with two workers on built-in sample issues, then the KPI."""

import click

from premath.cli._options import json_option
from premath.cli._root import AppContext, Reply, StrictCommand, pass_app


@click.command("demo", cls=StrictCommand)
@json_option
@pass_app
def demo(app: AppContext) -> Reply:
    """Drain built-in sample issues with two parallel workers in a temp folder; show the KPI."""
    from premath.harness.demo import demo_text, run_demo

    document = run_demo(app.clock.now, app.lock_timeout())
    exit_code = 0 if document["coordinator"]["exitCode"] == 0 else 1
    return Reply(document, text=demo_text, exit_code=exit_code)
