#!/usr/bin/env python3
"""Run a command while a busy loop keeps every core busy: the test suite as a loaded CI machine
runs it (`mise run test-loaded`; issue 35).

    python tools/loaded_run.py [--hogs N] [--max-seconds S] COMMAND [ARG...]

The busy loops are forked children of this script, one per core we may run on unless `--hogs`
says otherwise. They stop when the command ends (this script kills and reaps them, whatever
happened), when `--max-seconds` have passed, or when this script is gone (a loop that sees its
parent change stops by itself), so none outlives the run. The exit status is the command's;
Ctrl-C reaches the command from the terminal and SIGTERM sent to this script is passed on to it.
"""

import argparse
import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

DEFAULT_MAX_SECONDS = 7200
"""An upper bound on the load, above the whole suite's loaded run."""
_SPINS_PER_CHECK = 100_000
"""Busy-loop iterations between two looks at the clock and the parent (a few milliseconds)."""


def _usable_cores() -> int:
    """The cores this process may run on (all of them where the OS cannot say)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _spin(parent: int, deadline: float) -> None:
    """Burn this core until `deadline` or until `parent` is no longer our parent."""
    while time.monotonic() < deadline and os.getppid() == parent:
        for _ in range(_SPINS_PER_CHECK):
            pass


def _start_hog(deadline: float) -> int:
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        status = 0
        try:
            # The terminal's Ctrl-C reaches the whole process group; the script stops the loops.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            _spin(parent, deadline)
        except BaseException:  # noqa: BLE001 - nothing may escape a forked child
            status = 1
        finally:
            os._exit(status)
    return pid


@contextmanager
def busy_cores(count: int, max_seconds: float) -> Iterator[list[int]]:
    """`count` busy loops for at most `max_seconds`; killed and reaped when the block ends."""
    deadline = time.monotonic() + max_seconds
    pids: list[int] = []
    try:
        for _ in range(count):
            pids.append(_start_hog(deadline))
        yield pids
    finally:
        for pid in pids:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def _say(message: str) -> None:
    sys.stderr.write(f"loaded_run: {message}\n")
    sys.stderr.flush()


def run_command(command: list[str]) -> int:
    """Run `command` to its end and return its exit code (128 + n when signal n ended it; 127
    when it cannot start)."""
    try:
        pid = os.posix_spawnp(command[0], command, os.environ)
    except OSError as exc:
        _say(f"cannot run {command[0]}: {exc.strerror}")
        return 127

    def pass_on(signum: int, _frame: object) -> None:
        with suppress(ProcessLookupError):
            os.kill(pid, signum)

    # Ctrl-C reaches the command from the terminal (one process group): passed on too, it would
    # arrive twice, and pytest's second interrupt skips its teardown. SIGTERM is passed on.
    previous = {
        signal.SIGINT: signal.signal(signal.SIGINT, signal.SIG_IGN),
        signal.SIGTERM: signal.signal(signal.SIGTERM, pass_on),
    }
    try:
        _, status = os.waitpid(pid, 0)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="tools/loaded_run.py",
        description="Run COMMAND with a busy loop on every core (a loaded CI machine).",
        allow_abbrev=False,
    )
    parser.add_argument(
        "--hogs",
        type=int,
        default=_usable_cores(),
        help="busy loops to run (default: one per core this process may use)",
    )
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=DEFAULT_MAX_SECONDS,
        help="stop the busy loops after this long even if COMMAND runs on (default: %(default)s)",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command and its arguments")
    args = parser.parse_args(argv)
    if not args.command:
        parser.error("name the command to run, e.g. python -m pytest")
    if args.hogs < 0 or args.max_seconds <= 0:
        parser.error("--hogs must be 0 or more and --max-seconds more than 0")
    started = time.monotonic()
    with busy_cores(args.hogs, args.max_seconds) as pids:
        _say(
            f"{len(pids)} busy loops (pids {' '.join(map(str, pids))}) for at most "
            f"{args.max_seconds:g} s while running: {' '.join(args.command)}"
        )
        code = run_command(args.command)
    elapsed = time.monotonic() - started
    note = " (the load stopped before the command ended)" if elapsed > args.max_seconds else ""
    _say(f"exit {code} after {elapsed:.0f} s{note}")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
