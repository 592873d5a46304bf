"""`premath init [ROOT]`: create `.premath/` and its issues file, importing a beads store."""

import click

from premath.cli._options import json_option
from premath.cli._root import AppContext, Reply, StrictCommand, pass_app


@click.command("init", cls=StrictCommand)
@click.argument("root", required=False, metavar="[ROOT]")
@json_option
@pass_app
def init(app: AppContext, /, root: str | None) -> Reply:
    """Create the project's .premath/issues.jsonl. From ROOT/.beads/issues.jsonl when present.

    ROOT defaults to the project root: the nearest folder above holding .premath/, else the
    git root, else the working folder. A beads store is read row by row: kept rows are
    rewritten in premath's form, and the report lists what was dropped. An existing issues
    file is never touched.

    \b
    premath init . --json
    """
    from premath.issues.event_documents import init_document, init_text
    from premath.issues.init_layout import init_layout
    from premath.store.root import discover_root

    folder = discover_root() if root is None else root
    outcome = init_layout(folder, now=app.clock.now(), timeout_s=app.lock_timeout())
    return Reply(init_document(outcome), text=lambda _: init_text(outcome, folder))
