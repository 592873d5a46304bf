"""The hot path's stand-ins for the standard library it cannot afford, in one place.

A hot command (docs/architecture.md "The CLI fast path") must not import `typing` (it imports
`re`, which imports `enum`: about 5 ms of a 20 ms budget), `signal` (its enums, 1.5 ms) or
`threading`. Annotations cost nothing (every module has `from __future__ import annotations`
and imports typing's names under `if TYPE_CHECKING:`); what remains needs a value at run time:
- `NamedTuple`: typing's own for type checkers; at run time a real named tuple from
  `collections.namedtuple` (fields, defaults, methods, docstring), as typing's makes.
- the `signal` functions and numbers, from `_signal` (the C module) without the enums: nothing
  here needs a member's name (a handler that does imports `signal` when the signal arrives).
- which threads run, without importing `threading`: a process that never loaded it started no
  thread through it, so it runs its main thread alone; otherwise `threading` knows.
- `datetime`, `timedelta` and `UTC` from `_datetime`, the C module: on CPython 3.11 the
  `datetime` module first runs its whole pure-Python implementation and then replaces it with
  `_datetime`'s classes (1.3 ms of a claim). The classes are the same objects either way.
tests/test_hot_imports.py walks each hot command's imports and holds the stand-ins to typing's.
"""

from __future__ import annotations

import sys
from collections import namedtuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import UTC as UTC
    from datetime import datetime as datetime
    from datetime import timedelta as timedelta
    from signal import ITIMER_REAL as ITIMER_REAL
    from signal import SIG_DFL as SIG_DFL
    from signal import SIG_IGN as SIG_IGN
    from signal import SIGALRM as SIGALRM
    from signal import SIGINT as SIGINT
    from signal import SIGKILL as SIGKILL
    from signal import SIGTERM as SIGTERM
    from signal import getitimer as getitimer
    from signal import getsignal as getsignal
    from signal import setitimer as setitimer
    from signal import signal as signal
    from typing import NamedTuple as NamedTuple
else:
    from _datetime import UTC, datetime, timedelta
    from _signal import (
        ITIMER_REAL,
        SIG_DFL,
        SIG_IGN,
        SIGALRM,
        SIGINT,
        SIGKILL,
        SIGTERM,
        getitimer,
        getsignal,
        setitimer,
        signal,
    )

    _NAMED_TUPLE_OWN = frozenset(
        {"__module__", "__qualname__", "__annotations__", "__orig_bases__", "__slots__"}
    )

    class _NamedTupleMeta(type):
        def __new__(cls, name, _bases, namespace):
            fields = tuple(namespace.get("__annotations__", {}))
            defaults = [namespace[field] for field in fields if field in namespace]
            made = namedtuple(name, fields, defaults=defaults, module=namespace["__module__"])
            for key, value in namespace.items():
                if key not in _NAMED_TUPLE_OWN and key not in fields:
                    setattr(made, key, value)
            made.__annotations__ = dict(namespace.get("__annotations__", {}))
            return made

    NamedTuple = type.__new__(_NamedTupleMeta, "NamedTuple", (), {})


def in_main_thread() -> bool:
    """Whether the caller runs on the main thread (signal handlers can be set only there)."""
    threading = sys.modules.get("threading")
    return threading is None or threading.current_thread() is threading.main_thread()


def alone_in_process() -> bool:
    """Whether no other thread runs (a fork copies other threads' locks, not the threads)."""
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() == 1


__all__ = [
    "ITIMER_REAL",
    "SIGALRM",
    "SIGINT",
    "SIGKILL",
    "SIGTERM",
    "SIG_DFL",
    "SIG_IGN",
    "UTC",
    "NamedTuple",
    "alone_in_process",
    "datetime",
    "getitimer",
    "getsignal",
    "in_main_thread",
    "setitimer",
    "signal",
    "timedelta",
]
