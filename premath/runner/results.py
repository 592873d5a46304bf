"""Turn what a harness left behind (process outcome, `out/result.json`) into a trial verdict.

`result.json` is untrusted: it is opened without following symlinks, read up to a size cap, and
validated against `HarnessResult`; anything wrong is an `error` trial with its class, never an
exception (specs/runner.md "Trial outcome classes").
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from premath.models.trial import ErrorClass, Objective, Outcome
from premath.runner.process import ProcessOutcome

DEFAULT_RESULT_CAP = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Verdict:
    outcome: Outcome
    error_class: ErrorClass | None = None
    message: str | None = None
    objective: Objective | None = None
    metrics: dict[str, Any] = field(default_factory=dict)


def _error(error_class: ErrorClass, message: str) -> Verdict:
    return Verdict("error", error_class, message)


def _read_capped(path: Path, cap: int) -> bytes | Verdict:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return _error("result_missing", "the harness exited 0 but wrote no out/result.json")
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return _error("result_invalid", "out/result.json is a symlink; write a regular file")
        return _error("result_invalid", f"cannot open out/result.json: {exc.strerror or exc}")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return _error("result_invalid", "out/result.json is not a regular file")
        if info.st_size > cap:
            return _error(
                "result_invalid", f"out/result.json is {info.st_size} bytes, over the {cap} cap"
            )
        chunks = []
        remaining = cap + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
    finally:
        os.close(fd)
    if len(data) > cap:
        return _error("result_invalid", f"out/result.json grew over the {cap} byte cap")
    return data


def parse_result(data: bytes) -> Verdict:
    """Validate result.json bytes; the harness's own `error` outcome is class harness_error."""
    from pydantic import ValidationError

    from premath.models.trial import HarnessResult

    try:
        result = HarnessResult.model_validate_json(data)
    except ValidationError as exc:
        problems = []
        for item in exc.errors(include_url=False)[:5]:
            where = ".".join(str(part) for part in item["loc"]) or "(document)"
            problems.append(f"{where}: {item['msg']}")
        return _error("result_invalid", "out/result.json is invalid: " + "; ".join(problems))
    try:
        orjson.dumps(result.metrics)  # the trial row must be writable: ints beyond 64 bits, ...
    except (TypeError, orjson.JSONEncodeError) as exc:
        return _error("result_invalid", f"out/result.json metrics cannot be recorded: {exc}")
    if result.outcome == "error":
        return Verdict(
            "error",
            "harness_error",
            "the harness reported outcome error",
            result.objective,
            result.metrics,
        )
    return Verdict(result.outcome, None, None, result.objective, result.metrics)


_HEADLINE_BYTES = 8192
_TRACEBACK = "Traceback (most recent call last):"


def stderr_headline(process: ProcessOutcome, stderr_file: Path | None = None) -> str:
    """What a failed harness said first: the first non-blank line of its stderr (read from the
    file when given, else the kept tail), at most 200 characters. A Python traceback's first
    line says nothing, so for one the exception (its last line) is the headline."""
    head = ""
    if stderr_file is not None:
        try:
            with stderr_file.open("rb") as handle:
                head = handle.read(_HEADLINE_BYTES).decode("utf-8", errors="replace")
        except OSError:
            head = ""
    lines = [line.strip() for line in (head or process.stderr_tail).splitlines() if line.strip()]
    if not lines:
        return ""
    if lines[0] == _TRACEBACK:
        tail = [line.strip() for line in process.stderr_tail.splitlines() if line.strip()]
        return tail[-1][:200] if tail else lines[0]
    return lines[0][:200]


def judge(
    process: ProcessOutcome,
    result_file: Path,
    cap: int = DEFAULT_RESULT_CAP,
    stderr_file: Path | None = None,
) -> Verdict:
    """The verdict in the documented order: timeout, spawn, exit status, then result.json."""
    if process.status == "timeout":
        return _error("timeout", f"no exit within the deadline ({process.duration_s:.1f}s)")
    if process.status == "oom_killed":
        return _error(
            "oom_killed", "the container hit its memory limit and the OOM killer ended it"
        )
    if process.status == "spawn_failed":
        return _error("spawn_failed", process.spawn_error or "the command could not be started")
    if process.status != "ok":
        how = (
            f"exit code {process.exit_code}"
            if process.exit_code is not None
            else f"signal {process.signal}"
        )
        headline = stderr_headline(process, stderr_file)
        detail = f": {headline}" if headline else ""
        return _error("harness_exit_nonzero", f"the harness ended with {how}{detail}")
    data = _read_capped(result_file, cap)
    if isinstance(data, Verdict):
        return data
    return parse_result(data)
