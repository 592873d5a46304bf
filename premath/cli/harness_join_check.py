"""`premath harness-join-check`: the tool-calling turn's JoinClosed gate (specs/join-check.md).

The body is hot: it lives in `cli/hot/harness_join_check.py`, free of click.
"""

from __future__ import annotations

import click

from premath.cli._options import json_option, stacked
from premath.cli._root import CONTEXT_SETTINGS, StrictCommand
from premath.cli.hot import harness_join_check as hot

harness_join_check = stacked(
    click.command("harness-join-check", cls=StrictCommand, context_settings=CONTEXT_SETTINGS),
    click.option(
        "--input", "input_path", required=True, help="The turn, as JSON (specs/join-check.md)"
    ),
    json_option,
)(hot.harness_join_check)
