"""`premath harness-session read|write|bootstrap`: the session handoff artifact.

The bodies are hot (agents call them in loops): they live in `cli/hot/harness_session.py`,
free of click; here are their click declarations.
"""

from __future__ import annotations

import click

from premath.cli._options import json_option, path_option, project_path_option, stacked
from premath.cli._root import StrictGroup, pass_app
from premath.cli.hot import harness_session as hot
from premath.models.vocabulary import DEFAULT_ISSUES_PATH, SESSION_STATES

SESSION_PATH = ".premath/harness_session.json"
LEDGER_PATH = ".premath/harness_feature_ledger.json"
session_path_option = path_option(SESSION_PATH, "Harness-session artifact path", "--session-path")


@click.group("harness-session", cls=StrictGroup)
def harness_session() -> None:
    """Read and write the session handoff.

    The handoff (.premath/harness_session.json) says where the last agent stopped and what
    to do next; see specs/harness-session.md.
    """


harness_session_read = stacked(
    harness_session.command("read"),
    session_path_option,
    json_option,
)(hot.harness_session_read)

harness_session_write = stacked(
    harness_session.command("write"),
    session_path_option,
    click.option("--session-id", help="Explicit session id override"),
    click.option(
        "--state",
        type=click.Choice(SESSION_STATES),
        default="stopped",
        show_default=True,
        help="Session state",
    ),
    click.option("--issue-id", help="Current or resumed issue id"),
    click.option("--summary", help="Compact handoff summary"),
    click.option("--next-step", help="Next-step recommendation for bootstrap"),
    click.option("--instruction-ref", multiple=True, help="Instruction witness references"),
    click.option("--witness-ref", multiple=True, help="Gate/CI witness references"),
    click.option(
        "--lineage-ref", multiple=True, help="Site lineage references (ctx/cover/refinement)"
    ),
    project_path_option(
        "--issues",
        "--issues-path",
        "issues",
        default=DEFAULT_ISSUES_PATH,
        help_text="Issues JSONL path; the session records a digest of it",
    ),
    json_option,
    pass_app,
)(hot.harness_session_write)

harness_session_bootstrap = stacked(
    harness_session.command("bootstrap"),
    session_path_option,
    project_path_option(
        "--feature-ledger",
        default=LEDGER_PATH,
        help_text="Feature ledger the next step is read from",
    ),
    json_option,
)(hot.harness_session_bootstrap)
