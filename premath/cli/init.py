"""`premath init [ROOT]`: create `.premath/` and its issues file, importing a beads store."""

import click

from premath.cli._options import json_option
from premath.cli._root import AppContext, Reply, StrictCommand, pass_app


@click.command("init", cls=StrictCommand)
@click.argument("root", default=".", metavar="[ROOT]")
@json_option
@pass_app
def init(app: AppContext, /, root: str) -> Reply:
    """Create ROOT/.premath/issues.jsonl (from ROOT/.beads/issues.jsonl when present).

    \b
    A beads store is read row by row: kept rows are rewritten in premath's form, and the
    report lists what was dropped. An existing issues file is never touched.

    \b
    premath init . --json
    """
    from premath.issues.event_documents import init_document, init_text
    from premath.issues.init_layout import init_layout

    outcome = init_layout(root, now=app.clock.now(), timeout_s=app.lock_timeout())
    return Reply(init_document(outcome), text=lambda _: init_text(outcome, root))
