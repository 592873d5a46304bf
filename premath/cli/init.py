"""`premath init [ROOT]`: create `.premath/` and its issues file, importing a beads store."""

from __future__ import annotations

import click

from premath.cli._options import json_option
from premath.cli._root import AppContext, Reply, StrictCommand, pass_app


@click.command("init", cls=StrictCommand)
@click.argument("root", required=False, metavar="[ROOT]")
@click.option(
    "--with-policies",
    is_flag=True,
    help="Also write the instruction policy registry premath ships (policies/instruction/) "
    "for the team to edit; without it premath uses its own copy",
)
@json_option
@pass_app
def init(app: AppContext, /, root: str | None, with_policies: bool) -> Reply:
    """Create the project's .premath/issues.jsonl. From ROOT/.beads/issues.jsonl when present.

    ROOT defaults to the project root: the nearest folder above holding .premath/, else the
    git root, else the working folder. A beads store is read row by row: kept rows are
    rewritten in premath's form, and the report lists what was dropped. An existing issues
    file is never touched. --with-policies writes policies/instruction/ unless ROOT has one.

    \b
    premath init . --json
    """
    from premath.issues.event_documents import init_document, init_text
    from premath.issues.init_layout import init_layout
    from premath.store.root import discover_root

    folder = discover_root() if root is None else root
    outcome = init_layout(folder, now=app.clock.now(), timeout_s=app.lock_timeout())
    if not with_policies:
        return Reply(init_document(outcome), text=lambda _: init_text(outcome, folder))
    from premath.harness.instruction.policy import write_shipped_registry

    written = write_shipped_registry(folder)
    return Reply(
        {**init_document(outcome), "policiesWritten": written},
        text=lambda _: init_text(outcome, folder) + policies_text(written),
    )


def policies_text(written: list[str]) -> str:
    if not written:
        return "\n  policies: policies/instruction/ exists; left as it is"
    return "\n  policies written: " + ", ".join(written)
