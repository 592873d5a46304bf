"""The `signal` module's functions and numbers for the hot path, without its enums.

`signal` wraps `_signal` (the C module) to turn numbers into `enum` members; importing `enum`
costs a hot command about 1.5 ms of start-up, and nothing here needs the members' names (a
handler that does imports `signal` when the signal arrives).
"""

from premath.lean_typing import TYPE_CHECKING

if TYPE_CHECKING:
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
else:
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

__all__ = [
    "ITIMER_REAL",
    "SIGALRM",
    "SIGINT",
    "SIGKILL",
    "SIGTERM",
    "SIG_DFL",
    "SIG_IGN",
    "getitimer",
    "getsignal",
    "setitimer",
    "signal",
]
