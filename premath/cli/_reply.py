"""What every command shares without click: its context and its answer.

Kept free of click so the fast path (`cli/_fast.py`) and the hot commands' bodies
(`cli/hot/`) run without importing it; `cli/_root.py` re-exports both names.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from premath.clock import SystemClock
from premath.lean import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn

    from premath.clock import Clock


class AppContext:
    """State shared by every command: the clock (tests freeze it) and the lock timeout.

    A plain class, as `Reply` is a named tuple: building a dataclass costs a hot command's
    start-up about half a millisecond each."""

    def __init__(self, clock: Clock | None = None, lock_timeout_s: float | None = None) -> None:
        self.clock: Clock = SystemClock() if clock is None else clock
        self.lock_timeout_s = lock_timeout_s

    def lock_timeout(self) -> float:
        if self.lock_timeout_s is None:
            from premath.store.locks import lock_timeout_from_env

            self.lock_timeout_s = lock_timeout_from_env()
        return self.lock_timeout_s


class Reply(NamedTuple):
    """What a command answers: its stdout document, how to render it as text, its exit code."""

    document: Any
    text: Callable[[Any], str] | None = None
    exit_code: int = 0
    warnings: Sequence[str] = ()
    """Printed on stderr as `warning: ...` lines; the document stays the reference's."""
    sorted_keys: bool = True
    """False where the reference prints a struct in field order (agent-surface.md §0)."""


class LazyGroup(NamedTuple):
    """A command group loaded on first use: `module:attribute`, and its one-line help."""

    target: str
    short_help: str
    declarations: tuple[str, ...] = ()
    """The click-free modules declaring the group's commands (`cli/_declaration.py`), where the
    fast path looks for hot ones, in order: a command whose declaration costs more to load (a
    catalogued operation's) has a module of its own, last, so the others never load it."""


class RerunWithClick(Exception):
    """Raised by a command body, before it changes anything, when click must word the outcome
    (a usage error found after parsing): the fast path then runs the command through click."""


def usage_error(message: str) -> NoReturn:
    """A usage error found by a command body, worded by click (usage line, help hint, exit 2).

    Raise it before any side effect: under the fast path there is no click context, and the
    command is run again through click, which raises it with one."""
    import click

    ctx = click.get_current_context(silent=True)
    if ctx is None:
        raise RerunWithClick(message)
    raise click.UsageError(message, ctx=ctx)
