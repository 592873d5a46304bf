"""`premath harness-join-check`: the tool-calling turn's JoinClosed gate (specs/join-check.md).

The command is hot: declared with its body in `cli/hot/harness_join_check.py`, free of click.
"""

from __future__ import annotations

from premath.cli._options import click_command
from premath.cli.hot import harness_join_check as hot

harness_join_check = click_command(hot.harness_join_check)
