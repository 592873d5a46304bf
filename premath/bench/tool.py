"""The harness's way back into a live run: run a tool command under the deny rules, record a row.

`premath bench tool` checks the command against the run's deny rules (`raw/policy.json`), records
the call, then either records the denial and refuses (`policy_denied`, nothing runs) or runs it
bounded and records its result. `premath bench record` appends one harness trajectory row. Both
append to `raw/events.jsonl` under its lock, so calls from one harness keep their order.
specs/bench-run.md "Tool calls and rows".
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import orjson

from premath.bench.defaults import DEFAULT_TOOL_OUTPUT_CAP, DEFAULT_TOOL_TIMEOUT_S
from premath.bench.events import append_event
from premath.bench.paths import BenchRunPaths
from premath.errors import Conflict, InputInvalid, NotFound, PolicyDenied
from premath.store.files import read_bounded
from premath.store.jsonl import iter_lines
from premath.store.locks import hold_marker

TYPE_CHECKING = False
if TYPE_CHECKING:
    from premath.clock import Clock
    from premath.models.bench_policy import DenyRuleSpec

OBSERVATION_CAP = 64 << 10
"""Bytes of a tool's output kept in the trajectory; the whole output stays in raw/tools/."""
_TOOL_CALL_ROW_START = b'{"kind":"tool.call",'


def live_run(run_dir: str | os.PathLike[str]) -> BenchRunPaths:
    """The paths of a run that is still going; NotFound or Conflict otherwise."""
    paths = BenchRunPaths(Path(run_dir))
    if not paths.events.is_file():
        raise NotFound(
            f"no benchmark run at {run_dir} ({paths.events} is missing); "
            "pass the run_dir from the task file premath gave the harness"
        )
    if paths.summary.exists():
        raise Conflict(f"the run at {run_dir} has finished; it takes no more tool calls or rows")
    return paths


def _pinned_digest(paths: BenchRunPaths) -> str | None:
    """The policy digest `bench run` recorded in its first event, `run.started`."""
    for line in iter_lines(paths.events):
        with contextlib.suppress(orjson.JSONDecodeError):
            event = orjson.loads(line.text)
            if isinstance(event, dict) and event.get("kind") == "run.started":
                digest = event.get("policy_digest")
                return digest if isinstance(digest, str) else None
        break
    return None


def _pinned_rules(paths: BenchRunPaths) -> tuple[DenyRuleSpec, ...]:
    """The run's deny rules, refused unless raw/policy.json is the file the run started with:
    a harness that rewrites the policy must not loosen it."""
    from premath.bench.policy import policy_digest
    from premath.models.bench_policy import parse_deny_rules

    try:
        data = read_bounded(paths.policy)
    except FileNotFoundError:
        raise PolicyDenied(f"run policy {paths.policy} is missing; no command runs") from None
    except OSError as exc:
        raise InputInvalid(f"cannot read run policy {paths.policy}: {exc.strerror or exc}") from exc
    pinned, now = _pinned_digest(paths), policy_digest(data)
    if pinned != now:
        raise PolicyDenied(
            f"run policy {paths.policy} is not the one the run started with (pinned "
            f"{pinned or 'nothing: run.started has no policy_digest'}, found {now}); no command "
            "runs until the file is restored"
        )
    try:
        return parse_deny_rules(orjson.loads(data))
    except ValueError as exc:  # orjson.JSONDecodeError is a ValueError too
        raise InputInvalid(f"run policy {paths.policy} is malformed: {exc}") from exc


def _next_call_id(paths: BenchRunPaths) -> str:
    # Our rows start with their kind (row_bytes keeps field order), so counting needs no parse.
    with paths.events.open("rb") as handle:
        count = sum(1 for line in handle if line.startswith(_TOOL_CALL_ROW_START))
    return f"call_{count + 1}"


def _read_capped(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            data = handle.read(OBSERVATION_CAP)
    except FileNotFoundError:
        return ""
    return data.decode("utf-8", errors="replace")


def observation_text(stdout: str, stderr: str, status: str, exit_code: int | None) -> str:
    """What the agent saw: stdout, then stderr and the exit status when they say something."""
    text = stdout
    if stderr:
        text += f"{'' if not text or text.endswith(chr(10)) else chr(10)}[stderr]\n{stderr}"
    if status != "ok":
        ending = f"exit code {exit_code}" if exit_code is not None else status
        text += f"{'' if not text or text.endswith(chr(10)) else chr(10)}[{ending}]"
    return text


def run_tool(
    run_dir: str | os.PathLike[str],
    argv: list[str],
    *,
    clock: Clock,
    lock_timeout_s: float,
    call_id: str | None = None,
    message: str | None = None,
    function_name: str = "exec",
    timeout_s: float = DEFAULT_TOOL_TIMEOUT_S,
    output_cap: int = DEFAULT_TOOL_OUTPUT_CAP,
    cwd: Path | None = None,
) -> dict[str, Any]:
    """Run one command of the harness under the run's deny rules; the result document."""
    from premath.bench.policy import matching_rule
    from premath.runner.process import allowlisted_env, run_bounded

    if not argv:
        raise InputInvalid("no command given; put it after --, e.g. premath bench tool ... -- ls")
    paths = live_run(run_dir)
    rules = _pinned_rules(paths)
    paths.tools_dir.mkdir(parents=True, exist_ok=True)
    call = {"argv": argv, "function_name": function_name}
    if message is not None:
        call["message"] = message
    # Ids are counted and the call appended under one marker, so two concurrent calls never
    # draw the same `call_<n>`.
    with hold_marker(f"{paths.events}.ids.lock", timeout_s=lock_timeout_s):
        call_id = call_id or _next_call_id(paths)
        append_event(
            paths.events, "tool.call", clock.now(), lock_timeout_s, call_id=call_id, **call
        )
    denied = matching_rule(rules, argv)
    if denied is not None:
        index, rule = denied
        described = f"deny[{index}] {rule.describe()}"
        append_event(
            paths.events,
            "tool.denied",
            clock.now(),
            lock_timeout_s,
            call_id=call_id,
            status="denied",
            exit_code=None,
            rule=described,
        )
        raise PolicyDenied(f"{call_id}: command refused by {described}; it was not run")
    stdout_path, stderr_path = (
        paths.tool_output(call_id, "stdout"),
        paths.tool_output(call_id, "stderr"),
    )
    outcome = run_bounded(
        argv,
        cwd=cwd or Path.cwd(),
        env=allowlisted_env(),
        timeout_s=timeout_s,
        stdout_path=stdout_path,
        stderr_path=stderr_path,
        output_cap=output_cap,
    )
    stdout, stderr = _read_capped(stdout_path), _read_capped(stderr_path)
    if outcome.status == "spawn_failed":
        stderr = outcome.spawn_error or stderr
    append_event(
        paths.events,
        "tool.result",
        clock.now(),
        lock_timeout_s,
        call_id=call_id,
        status=outcome.status,
        exit_code=outcome.exit_code,
        output=observation_text(stdout, stderr, outcome.status, outcome.exit_code),
        truncated=outcome.stdout_truncated or outcome.stderr_truncated,
        **({"leftover_descendants": n} if (n := outcome.leftover_descendants) else {}),
    )
    return {
        "call_id": call_id,
        "status": outcome.status,
        "exit_code": outcome.exit_code,
        "stdout": stdout,
        "stderr": stderr,
        "truncated": outcome.stdout_truncated or outcome.stderr_truncated,
    }


def record_row(
    run_dir: str | os.PathLike[str], row_json: str, *, clock: Clock, lock_timeout_s: float
) -> dict[str, Any]:
    """Append one harness trajectory row after checking it maps to a valid ATIF step."""
    from pydantic import ValidationError

    from premath.bench.inputs import pydantic_problems
    from premath.models.bench import HarnessRow

    paths = live_run(run_dir)
    try:
        document = orjson.loads(row_json)
    except orjson.JSONDecodeError as exc:
        raise InputInvalid(f"--row is not valid JSON: {exc}") from exc
    try:
        row = HarnessRow.model_validate(document)
    except ValidationError as exc:
        raise InputInvalid(f"--row is not a trajectory row: {pydantic_problems(exc)}") from exc
    stored = row.model_dump(mode="json", exclude_none=True)
    append_event(paths.events, "harness.row", clock.now(), lock_timeout_s, row=stored)
    return {"recorded": True, "source": row.source, "run_dir": os.fspath(paths.root)}
