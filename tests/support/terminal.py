"""A real terminal for tests: run a command in a pty of a given width, and read what a person
would see (carriage returns overwrite the line, as a terminal draws them)."""

import fcntl
import os
import pty
import select
import struct
import sys
import termios
import time
from pathlib import Path


def run_in_pty(
    argv: list[str],
    *,
    columns: int,
    cwd: Path,
    env: dict[str, str] | None = None,
    timeout_s: float = 300,
) -> tuple[int, str]:
    """(exit status, everything written to the terminal) of `argv` run in a `columns`-wide pty
    (stdout and stderr both); `COLUMNS` is not set, so the width comes from the terminal."""
    child_env = {**os.environ, **(env or {}), "TERM": "dumb"}
    child_env.pop("COLUMNS", None)
    child_env.pop("LINES", None)
    pid, fd = pty.fork()
    if pid == 0:  # the child: exec at once, nothing else
        os.chdir(cwd)
        os.execvpe(argv[0], argv, child_env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    chunks = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if not ready:
            if os.waitpid(pid, os.WNOHANG) != (0, 0):
                break
            continue
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), b"".join(chunks).decode("utf-8", "replace")


def screen_lines(output: str) -> list[str]:
    """The lines a terminal shows for `output`: `\\r` returns to the line's start and later
    text overwrites earlier text in place (what is not overwritten stays, as on a screen)."""
    lines = []
    for raw in output.replace("\r\n", "\n").split("\n"):
        line: list[str] = []
        column = 0
        for char in raw:
            if char == "\r":
                column = 0
                continue
            if column < len(line):
                line[column] = char
            else:
                line.append(char)
            column += 1
        lines.append("".join(line))
    return lines


def frames(output: str) -> list[str]:
    """Every piece of text between line starts: each frame a `\\r`-redrawn line showed."""
    return [frame for raw in output.replace("\r\n", "\n").split("\n") for frame in raw.split("\r")]


PREMATH = [sys.executable, "-m", "premath"]
