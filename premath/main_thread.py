"""Which threads run, without importing `threading` (a hot command's start-up budget).

A process that never loaded `threading` started no thread through it, so it runs its main
thread alone; otherwise `threading` knows. (`threading` itself counts only the threads it
started or has met, so nothing is lost.)
"""

import sys


def in_main_thread() -> bool:
    """Whether the caller runs on the main thread (signal handlers can be set only there)."""
    threading = sys.modules.get("threading")
    return threading is None or threading.current_thread() is threading.main_thread()


def alone_in_process() -> bool:
    """Whether no other thread runs (a fork copies other threads' locks, not the threads)."""
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() == 1
