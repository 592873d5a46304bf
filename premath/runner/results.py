"""Turn what a harness left behind (process outcome, `out/result.json`) into a trial verdict.

`result.json` is untrusted: it is opened without following symlinks, read up to a size cap, and
validated against `HarnessResult`; anything wrong is an `error` trial with its class, never an
exception (specs/runner.md "Trial outcome classes").
"""

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


def judge(process: ProcessOutcome, result_file: Path, cap: int = DEFAULT_RESULT_CAP) -> Verdict:
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
        tail = process.stderr_tail.strip().splitlines()[-1:] if process.stderr_tail else []
        detail = f": {tail[0][:200]}" if tail else ""
        return _error("harness_exit_nonzero", f"the harness ended with {how}{detail}")
    data = _read_capped(result_file, cap)
    if isinstance(data, Verdict):
        return data
    return parse_result(data)
