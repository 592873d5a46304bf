"""`.premath/.gitignore`: what in the state folder is bulky or transient, kept out of git.

Divergence D16-9: the reference writes none, so `git add .premath` picks up run folders, command
logs, lock markers and temp files. The record (issues, session, ledger, trajectory, join
witnesses) stays in; a remote worker's outbox (rows on their way to the authority) stays out.
An existing file is the user's and is never changed.
"""

from __future__ import annotations

import os
from pathlib import Path

from premath.store.atomic import write_atomic

GITIGNORE_BYTES = (
    b"# Written by premath: bulky or transient files stay out of git; the record stays in.\n"
    b"runs/\n"
    b"harness_steps/\n"
    b"harness_outbox.*\n"
    b"*.lock\n"
    b".*.tmp.*\n"
)


def ensure_gitignore(premath_dir: str) -> None:
    """Write `<premath_dir>/.gitignore` unless one exists."""
    path = Path(premath_dir) / ".gitignore"
    if not os.path.lexists(path):
        write_atomic(path, GITIGNORE_BYTES)
