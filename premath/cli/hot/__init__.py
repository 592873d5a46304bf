"""The bodies and text renderers of the hot agent commands, free of click.

Agents call these commands hundreds of times, so the fast path (`cli/_fast.py`) runs them
without importing click. Each body here is the click callback itself: its click declaration
(options, the help taken from its docstring) stays in the group's module (`cli/issue.py`, ...),
the one definition of its options, from which `cli/_fast_spec.py` derives the fast path's table.
"""

from __future__ import annotations
