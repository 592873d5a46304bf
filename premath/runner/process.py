"""The one place premath spawns processes: bounded in time, output, environment and resources.

API (specs/runner.md "Processes"):

    outcome = run_bounded(
        ["python", "harness.py", "in.json", "out.json"],
        cwd=trial_dir, env=allowlisted_env(extra={"DEBUG": "1"}), timeout_s=30.0,
        stdout_path=trial_dir / "stdout.txt", stderr_path=trial_dir / "stderr.txt",
        output_cap=1 << 20,
    )
    if outcome.status == "timeout": ...

- `argv` is a list (never a shell); stdin is /dev/null unless `stdin` bytes are given.
- `env` is the child's whole environment: build it with `allowlisted_env`, which keeps only
  `ALLOWED_ENV` from ours (never `PREMATH_*`, `AGENTLAB_*` or API keys) plus the caller's extras.
  `extra_env` is overlaid last, for callers that pass a ready base.
- The child leads its own process group. At the deadline the group gets SIGTERM, then SIGKILL
  after `grace_s`. When the leader exits (for any reason) whatever is left of its group is killed
  too, and so is every descendant that left the group (`setsid`, a double fork): premath is the
  subreaper of what it starts (`runner/descendants.py`), so nothing the call started outlives
  it; `leftover_descendants` counts those still running when the leader exited.
- stdout and stderr go to their files up to `output_cap` bytes each; the rest is read, counted
  and dropped (`*_truncated`). A path of None counts without writing. The last `tail_bytes` of
  each stream are kept in the outcome for messages. Child output never reaches our streams.
- Resource limits (`ResourceLimits`) hold from the child's first instruction: the command is
  started behind util-linux's `prlimit` tool, which sets them and execs it (no `preexec_fn`:
  unsafe with threads, and callers run us on a pool). Without that tool they are applied with
  `resource.prlimit` right after the spawn, so the child may run briefly before they apply.
- `cancel` (a `threading.Event`) ends the group like a deadline when set, status `cancelled`:
  how a pool stops its in-flight children on Ctrl-C (checked every 50 ms).
- `group_ticket` names a file that records the child's group (`<pid> <start time>`) while it
  runs and is removed when the call returns. If our process dies first (SIGKILL), the file
  outlives it and `reap_group_ticket(path)` later kills the orphaned group, checking the start
  time so a reused pid is never hit (Linux; elsewhere it only removes the file).
- Never raises for the child's behaviour: a missing program is status `spawn_failed`. Durations
  are monotonic. Safe to call from many threads at once.

One thread serves both pipes, optional stdin and the deadline with a selector, instead of one
draining thread per pipe: a descendant that escapes the group (setsid) and keeps a pipe open
cannot leave a reader thread hanging; the drain after the leader's exit is bounded by `grace_s`.
Leader exit is watched with a pidfd where Linux offers one, else polled every few milliseconds.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from premath.runner.descendants import (
    OBSERVE_EVERY_S,
    CallTree,
    become_subreaper,
    call_in_flight,
    register_leader,
)
from premath.runner.interrupts import InterruptHold
from premath.store.owners import process_start_time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO

ProcessStatus = Literal["ok", "exit_nonzero", "timeout", "cancelled", "spawn_failed", "oom_killed"]
"""`ok`: exit code 0. `exit_nonzero`: any other exit, or death by a signal we did not send.
`timeout`: the deadline passed and we ended the group. `cancelled`: the caller's `cancel` event
was set and we ended the group. `spawn_failed`: the program could not be started (not found,
not executable, bad cwd). `oom_killed`: a container executor's engine says the OOM killer ended
the child (the local executor never reports it)."""

ALLOWED_ENV: tuple[str, ...] = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ")
"""The only variables a child inherits from our environment."""

DEFAULT_TAIL_BYTES = 4096
DEFAULT_GRACE_S = 2.0
_READ_CHUNK = 1 << 16
_POLL_S = 0.005
_CANCEL_POLL_S = 0.05


def passed_env(names: Sequence[str], *, flag: str = "--pass-env") -> dict[str, str]:
    """The values of the variables a user names (`--pass-env`) that are set in our environment;
    PREMATH_* and AGENTLAB_* names are refused (InvalidUsage), as `run --env` refuses them:
    premath's own settings never reach a harness."""
    if not names:
        return {}
    from premath.errors import InvalidUsage
    from premath.models.experiment import RUNNER_ENV_PREFIXES

    for name in names:
        if name.upper().startswith(RUNNER_ENV_PREFIXES):
            raise InvalidUsage(f"{flag} {name}: PREMATH_* and AGENTLAB_* are never passed on")
    return {name: os.environ[name] for name in names if name in os.environ}


def allowlisted_env(
    extra: Mapping[str, str] | None = None, *, source: Mapping[str, str] | None = None
) -> dict[str, str]:
    """`ALLOWED_ENV` taken from `source` (default: our environment), then `extra` over it."""
    origin = os.environ if source is None else source
    env = {name: origin[name] for name in ALLOWED_ENV if name in origin}
    env.update(extra or {})
    return env


@dataclass(frozen=True, slots=True)
class ResourceLimits:
    """Per-process limits applied with prlimit where the OS allows; None leaves one unset."""

    memory_mb: int | None = None
    """Address space (RLIMIT_AS): allocations beyond it fail in the child."""
    cpu_seconds: int | None = None
    """CPU time (RLIMIT_CPU): the child gets SIGXCPU, then SIGKILL."""
    file_size_mb: int | None = None
    """Largest file the child may write (RLIMIT_FSIZE): bigger writes fail (SIGXFSZ)."""
    open_files: int | None = None
    """Open descriptors (RLIMIT_NOFILE)."""


@dataclass(frozen=True, slots=True)
class ProcessOutcome:
    """What happened to one child; data, never an exception."""

    status: ProcessStatus
    exit_code: int | None
    """The exit status when the child exited normally, else None."""
    signal: int | None
    """The signal that ended the child, else None."""
    duration_s: float
    """Monotonic seconds from just before the spawn until the leader was reaped."""
    stdout_bytes: int
    """Bytes the child wrote to stdout, including those dropped past the cap."""
    stderr_bytes: int
    stdout_truncated: bool
    stderr_truncated: bool
    stdout_tail: str
    """The last `tail_bytes` of stdout, decoded with replacement."""
    stderr_tail: str
    pid: int | None
    spawn_error: str | None = None
    limits_applied: tuple[str, ...] = ()
    """Names of the `ResourceLimits` fields the OS accepted."""
    leftover_descendants: int = 0
    """Descendants outside the leader's process group still running when it exited (a daemon,
    a `setsid` grandchild); we ended them."""
    program_missing: bool = False
    """`spawn_failed` because the program does not exist (FileNotFoundError): no retry helps."""


def spawn_failed(
    reason: str, duration_s: float = 0.0, *, program_missing: bool = False
) -> ProcessOutcome:
    """The outcome of a child that never started: no output, no exit, `reason` said why."""
    return ProcessOutcome(
        status="spawn_failed",
        exit_code=None,
        signal=None,
        duration_s=duration_s,
        stdout_bytes=0,
        stderr_bytes=0,
        stdout_truncated=False,
        stderr_truncated=False,
        stdout_tail="",
        stderr_tail="",
        pid=None,
        spawn_error=reason,
        program_missing=program_missing,
    )


class _Sink:
    """One output stream: a capped file (or none), a byte count and a tail."""

    def __init__(self, path: Path | None, cap: int, tail_bytes: int) -> None:
        # Unbuffered: a log is readable while the child runs (the coordinator streams it).
        self._file: BinaryIO | None = (
            open(path, "wb", buffering=0)  # noqa: SIM115 - closed in close()
            if path is not None
            else None
        )
        self._cap = cap
        self._tail_bytes = tail_bytes
        self.total = 0
        self.tail = bytearray()

    def write(self, data: bytes) -> None:
        room = self._cap - self.total
        if self._file is not None and room > 0:
            self._file.write(data[:room])
        self.total += len(data)
        if self._tail_bytes:
            self.tail += data[-self._tail_bytes :]
            del self.tail[: -self._tail_bytes]

    @property
    def truncated(self) -> bool:
        return self.total > self._cap

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def _apply_limits(pid: int, limits: ResourceLimits | None) -> tuple[str, ...]:
    if limits is None:
        return ()
    try:
        import resource
    except ImportError:  # not a POSIX system: limits are best effort
        return ()
    prlimit = getattr(resource, "prlimit", None)
    if prlimit is None:  # macOS has no prlimit
        return ()
    mb = 1024 * 1024
    wanted = {
        "memory_mb": ("RLIMIT_AS", limits.memory_mb, mb),
        "cpu_seconds": ("RLIMIT_CPU", limits.cpu_seconds, 1),
        "file_size_mb": ("RLIMIT_FSIZE", limits.file_size_mb, mb),
        "open_files": ("RLIMIT_NOFILE", limits.open_files, 1),
    }
    applied = []
    for name, (limit_name, value, unit) in wanted.items():
        limit = getattr(resource, limit_name, None)
        if value is None or limit is None:
            continue
        with contextlib.suppress(OSError, ValueError):
            prlimit(pid, limit, (value * unit, value * unit))
            applied.append(name)
    return tuple(applied)


_PRLIMIT_FLAGS = {
    "memory_mb": ("--as", 1024 * 1024),
    "cpu_seconds": ("--cpu", 1),
    "file_size_mb": ("--fsize", 1024 * 1024),
    "open_files": ("--nofile", 1),
}


def _resolves(program: str, cwd: str | os.PathLike[str], path: str | None) -> bool:
    if os.sep in program:
        return os.access(os.path.join(cwd, program), os.X_OK)
    return shutil.which(program, path=path) is not None


def _behind_prlimit(
    argv: Sequence[str],
    cwd: str | os.PathLike[str],
    env: Mapping[str, str],
    limits: ResourceLimits | None,
) -> tuple[list[str], tuple[str, ...]] | None:
    """`argv` started by the `prlimit` tool with `limits` set, or None to start it directly.

    Only when the program resolves: a missing program must stay a `spawn_failed` outcome
    rather than become the tool's own error exit.
    """
    tool = shutil.which("prlimit") if limits is not None and argv else None
    if tool is None or not _resolves(argv[0], cwd, env.get("PATH")):
        return None
    options, names = [], []
    for name, (flag, unit) in _PRLIMIT_FLAGS.items():
        value = getattr(limits, name)
        if value is not None:
            options.append(f"{flag}={value * unit}")
            names.append(name)
    if not options:
        return None
    return [tool, *options, "--", *argv], tuple(names)


def _leader_exited(pid: int) -> bool:
    """True once the leader is a zombie; it is not reaped, so its pid (our pgid) stays reserved."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _open_pidfd(pid: int) -> int | None:
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return None
    try:
        fd: int = pidfd_open(pid)
    except OSError:
        return None
    return fd


def run_bounded(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str],
    timeout_s: float | None,
    stdout_path: str | os.PathLike[str] | None,
    stderr_path: str | os.PathLike[str] | None,
    output_cap: int,
    grace_s: float = DEFAULT_GRACE_S,
    stdin: bytes | None = None,
    extra_env: Mapping[str, str] | None = None,
    limits: ResourceLimits | None = None,
    tail_bytes: int = DEFAULT_TAIL_BYTES,
    cancel: threading.Event | None = None,
    group_ticket: str | os.PathLike[str] | None = None,
) -> ProcessOutcome:
    """Run `argv` to completion within `timeout_s`, its output capped into files; see module doc."""
    child_env = dict(env)
    child_env.update(extra_env or {})
    out = _Sink(Path(stdout_path) if stdout_path is not None else None, output_cap, tail_bytes)
    err = _Sink(Path(stderr_path) if stderr_path is not None else None, output_cap, tail_bytes)
    become_subreaper()
    with call_in_flight() as leader_slot:
        return _run_in_flight(
            argv, cwd, child_env, timeout_s, out, err, grace_s, stdin, limits, cancel,
            group_ticket, leader_slot,
        )  # fmt: skip


def _run_in_flight(
    argv: Sequence[str],
    cwd: str | os.PathLike[str],
    child_env: dict[str, str],
    timeout_s: float | None,
    out: _Sink,
    err: _Sink,
    grace_s: float,
    stdin: bytes | None,
    limits: ResourceLimits | None,
    cancel: threading.Event | None,
    group_ticket: str | os.PathLike[str] | None,
    leader_slot: list[int],
) -> ProcessOutcome:
    started = time.monotonic()
    launch = _behind_prlimit(argv, cwd, child_env, limits)
    spawn_argv, preset_limits = launch if launch is not None else (list(argv), ())
    hold = InterruptHold()
    try:
        proc = subprocess.Popen(
            spawn_argv,
            cwd=cwd,
            env=child_env,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
        )
    except (OSError, ValueError) as exc:
        out.close()
        err.close()
        hold.release()
        reason = getattr(exc, "strerror", None) or str(exc)
        return spawn_failed(
            f"cannot start {argv[0] if argv else '(empty command)'}: {reason}",
            duration_s=time.monotonic() - started,
            program_missing=isinstance(exc, FileNotFoundError),
        )
    except BaseException:
        hold.release()
        raise
    register_leader(leader_slot, proc.pid)
    tree = CallTree(proc.pid)
    ticket = Path(group_ticket) if group_ticket is not None else None
    try:
        hold.release()  # a stop signal that came during the spawn is raised here: group killed
        if ticket is not None:
            _write_ticket(ticket, proc.pid)
        applied = preset_limits or _apply_limits(proc.pid, limits)
        ended_by_us, leftover = _Supervision(
            proc, out, err, stdin, started, timeout_s, grace_s, cancel, tree
        ).run()
        returncode = proc.wait()
        duration = time.monotonic() - started
    except BaseException:  # Ctrl-C in the caller's thread, or a bug of ours: never orphan it
        _signal_group(proc.pid, signal.SIGKILL)
        tree.end_remaining()
        proc.wait()
        raise
    finally:
        out.close()
        err.close()
        if ticket is not None:
            ticket.unlink(missing_ok=True)
    exit_code = returncode if returncode >= 0 else None
    signum = -returncode if returncode < 0 else None
    status: ProcessStatus = ended_by_us or ("ok" if returncode == 0 else "exit_nonzero")
    return ProcessOutcome(
        status=status,
        exit_code=exit_code,
        signal=signum,
        duration_s=duration,
        stdout_bytes=out.total,
        stderr_bytes=err.total,
        stdout_truncated=out.truncated,
        stderr_truncated=err.truncated,
        stdout_tail=bytes(out.tail).decode("utf-8", errors="replace"),
        stderr_tail=bytes(err.tail).decode("utf-8", errors="replace"),
        pid=proc.pid,
        limits_applied=applied,
        leftover_descendants=leftover,
    )


class _Supervision:
    """Drain the pipes, enforce the deadline and `cancel` until the leader has exited.

    `run` returns why we ended the group ("timeout" or "cancelled", None if it ended by
    itself) and how many descendants outside the group were still running when the leader
    exited. On return the leader is a zombie (not yet reaped) and the rest of its group, and
    every descendant that left it, has been killed.
    """

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        out: _Sink,
        err: _Sink,
        stdin: bytes | None,
        started: float,
        timeout_s: float | None,
        grace_s: float,
        cancel: threading.Event | None,
        tree: CallTree,
    ) -> None:
        assert proc.stdout is not None
        assert proc.stderr is not None
        self.proc, self.grace_s, self.cancel, self.tree = proc, grace_s, cancel, tree
        self.selector = selectors.DefaultSelector()
        self.sinks = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
        for fd in self.sinks:
            self.selector.register(fd, selectors.EVENT_READ)
        self.pending_input = memoryview(stdin or b"")
        self.stdin_fd: int | None = None
        if proc.stdin is not None:
            self.stdin_fd = proc.stdin.fileno()
            os.set_blocking(self.stdin_fd, False)
            self.selector.register(self.stdin_fd, selectors.EVENT_WRITE)
        self.pidfd = _open_pidfd(proc.pid)
        if self.pidfd is not None:
            self.selector.register(self.pidfd, selectors.EVENT_READ)
        self.deadline = None if timeout_s is None else started + max(timeout_s, 0.0)
        self.kill_at: float | None = None
        self.drain_until: float | None = None
        self.ended_by_us: Literal["timeout", "cancelled"] | None = None
        self.leader_done = False
        self.leftover = 0
        self.observe_at = started + OBSERVE_EVERY_S

    def run(self) -> tuple[Literal["timeout", "cancelled"] | None, int]:
        try:
            while self.sinks or not self.leader_done:
                now = time.monotonic()
                if not self.leader_done:
                    if self._leader_ended(now):
                        continue
                elif self.drain_until is not None and now >= self.drain_until:
                    break  # an escaped descendant holds a pipe open; stop reading it
                self._pump(self._wait_s(now))
        finally:
            self._close()
        return self.ended_by_us, self.leftover

    def _leader_ended(self, now: float) -> bool:
        """Signal the group at the deadline or on cancel (TERM, then KILL after the grace),
        look at the call tree now and then; True once the leader has exited (the group and
        every descendant killed, the pipes drained for at most the grace from now)."""
        pid = self.proc.pid
        if self.ended_by_us is None:
            if self.deadline is not None and now >= self.deadline:
                self.ended_by_us = "timeout"
            elif self.cancel is not None and self.cancel.is_set():
                self.ended_by_us = "cancelled"
            if self.ended_by_us is not None:
                _signal_group(pid, signal.SIGTERM)
                self.kill_at = now + self.grace_s
        if self.kill_at is not None and now >= self.kill_at:
            _signal_group(pid, signal.SIGKILL)
            self.kill_at = None
        if now >= self.observe_at:
            self.tree.observe()
            self.observe_at = now + OBSERVE_EVERY_S
        if not _leader_exited(pid):
            return False
        self.leader_done = True
        _signal_group(pid, signal.SIGKILL)
        self.leftover = self.tree.end_remaining()
        self.drain_until = time.monotonic() + self.grace_s
        if self.pidfd is not None:
            self.selector.unregister(self.pidfd)
            os.close(self.pidfd)
            self.pidfd = None
        return True

    def _wait_s(self, now: float) -> float | None:
        """How long the next select may block: until the next deadline, kill or look at the
        tree, or a short poll where no pidfd wakes us when the leader exits."""
        if self.leader_done:
            wake = [self.drain_until] if self.drain_until is not None else []
        else:
            pending = None if self.ended_by_us else self.deadline
            wake = [t for t in (pending, self.kill_at) if t is not None]
        wait = max(0.0, min(wake) - now) if wake else None
        if not self.leader_done:
            poll = (
                _POLL_S
                if self.pidfd is None
                else _CANCEL_POLL_S
                if self.cancel is not None
                else None
            )
            if poll is not None:
                wait = poll if wait is None else min(wait, poll)
            until_observe = max(0.0, self.observe_at - now)
            wait = until_observe if wait is None else min(wait, until_observe)
        return wait

    def _pump(self, wait: float | None) -> None:
        """Feed stdin and drain stdout and stderr for what is ready within `wait`."""
        for key, _ in self.selector.select(wait):
            fd = key.fd
            if fd == self.pidfd:
                continue
            if fd == self.stdin_fd:
                self.pending_input = _feed(fd, self.pending_input)
                if not self.pending_input:
                    self.selector.unregister(fd)
                    assert self.proc.stdin is not None
                    with contextlib.suppress(OSError):
                        self.proc.stdin.close()
                    self.stdin_fd = None
                continue
            data = os.read(fd, _READ_CHUNK)
            if data:
                self.sinks[fd].write(data)
            else:
                self.selector.unregister(fd)
                del self.sinks[fd]

    def _close(self) -> None:
        if self.pidfd is not None:
            os.close(self.pidfd)
        self.selector.close()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


def _feed(fd: int, pending: memoryview) -> memoryview:
    """Write what the pipe takes now; an empty view means done (or the child closed stdin)."""
    try:
        written = os.write(fd, pending)
    except BlockingIOError:
        return pending
    except (BrokenPipeError, OSError):
        return memoryview(b"")
    return pending[written:]


def _write_ticket(path: Path, pid: int) -> None:
    path.write_text(f"{pid} {process_start_time(pid) or '-'}\n", encoding="ascii")


def signal_group_ticket(path: str | os.PathLike[str], signum: int) -> bool:
    """Send `signum` to the group a `group_ticket` names, if its leader is still the process
    that wrote it. True when a group was signalled; nothing without a start time (not Linux)."""
    try:
        pid_text, start = Path(path).read_text(encoding="ascii").split()
        pid = int(pid_text)
    except (OSError, ValueError):
        return False
    now_start = process_start_time(pid) if start != "-" and pid > 0 else "unknown"
    # Same leader: its group is ours. No process with that pid but a group with that id: the
    # leader died and left members, and Linux never reuses a pid still naming a group, so that
    # group is ours too. A different process under the pid: not ours, leave it alone.
    if now_start == start or now_start is None:
        with contextlib.suppress(OSError):
            os.killpg(pid, signum)
            return True
    return False


def reap_group_ticket(path: str | os.PathLike[str]) -> bool:
    """Kill the group a dead caller's `group_ticket` names, if its leader still runs; remove it.

    True when a group was signalled.
    """
    try:
        return signal_group_ticket(path, signal.SIGKILL)
    finally:
        Path(path).unlink(missing_ok=True)
