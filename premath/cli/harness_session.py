"""`premath harness-session read|write|bootstrap`: the session handoff artifact.

The commands are hot (agents call them in loops): declared with their bodies in
`cli/hot/harness_session.py`, free of click; here is their group.
"""

from __future__ import annotations

import click

from premath.cli._options import click_command
from premath.cli._root import StrictGroup
from premath.cli.hot import harness_session as hot


@click.group("harness-session", cls=StrictGroup)
def harness_session() -> None:
    """Read and write the session handoff.

    The handoff (.premath/harness_session.json) says where the last agent stopped and what
    to do next; see specs/harness-session.md.
    """


harness_session_read = click_command(hot.harness_session_read, harness_session)
harness_session_write = click_command(hot.harness_session_write, harness_session)
harness_session_bootstrap = click_command(hot.harness_session_bootstrap, harness_session)
