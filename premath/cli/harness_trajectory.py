"""`premath harness-trajectory append|query`: the append-only step trajectory.

The commands are hot (agents call them in loops): declared with their bodies in
`cli/hot/harness_trajectory.py`, free of click; here is their group.
"""

from __future__ import annotations

import click

from premath.cli._options import click_command
from premath.cli._root import StrictGroup
from premath.cli.hot import harness_trajectory as hot


@click.group("harness-trajectory", cls=StrictGroup)
def harness_trajectory() -> None:
    """Append to and query the step trajectory.

    The trajectory (.premath/harness_trajectory.jsonl) records every step, append-only; see
    specs/harness-trajectory.md.
    """


harness_trajectory_append = click_command(hot.harness_trajectory_append, harness_trajectory)
harness_trajectory_query = click_command(hot.harness_trajectory_query, harness_trajectory)
