"""The hot agent commands: each declared once (`cli/_declaration.py`) beside its body and text
renderer, free of click.

Agents call these commands hundreds of times, so the fast path (`cli/_fast.py`) parses them
from their declarations without importing click; the groups' modules (`cli/issue.py`, ...)
build their click commands from the same declarations (help taken from the body's docstring).
Making a command hot is `hot=True` on its declaration, in a module its group names
(`LazyGroup.declarations` in `cli/__init__.py`); a catalogued operation's command
(`issue_update.py`) is declared by the operation, and hot by its `hot=True`.
"""

from __future__ import annotations
