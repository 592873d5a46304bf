"""The user's inputs to a benchmark run (task file, instruction, deny policy), checked up front.

Every problem is found before the run folder exists, so bad input never leaves a half-made run:
a bad file is `input_invalid` (exit 1), a missing or blank instruction a usage error (exit 2).
specs/bench-run.md "Bad input".
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from premath.errors import InputInvalid, InvalidUsage
from premath.store.files import read_capped

TYPE_CHECKING = False
if TYPE_CHECKING:
    from premath.models.bench import BenchPolicy, BenchTask

INPUT_SIZE_CAP = 1 << 20


def pydantic_problems(exc: Any) -> str:
    """`location: message` for each error of a pydantic ValidationError, joined with `; `."""
    problems = []
    for error in exc.errors(include_url=False):
        location = ""
        for part in error["loc"]:
            location += f"[{part}]" if isinstance(part, int) else (f".{part}" if location else part)
        message = error["msg"].removeprefix("Value error, ")
        problems.append(f"{location}: {message}" if location else message)
    return "; ".join(problems)


def read_json_file(path: str | os.PathLike[str], what: str, cap: int = INPUT_SIZE_CAP) -> Any:
    """The JSON value of a small input file, or InputInvalid naming the file and the problem."""
    import orjson

    target = Path(path)
    try:
        with target.open("rb") as handle:
            raw = read_capped(handle, cap)
    except FileNotFoundError as exc:
        raise InputInvalid(f"{what} {target} does not exist") from exc
    except IsADirectoryError:
        raise InputInvalid(f"{what} {target} is a folder; pass the JSON file") from None
    except OSError as exc:
        raise InputInvalid(f"cannot read {what} {target}: {exc.strerror or exc}") from exc
    if len(raw) > cap:
        raise InputInvalid(f"{what} {target} is larger than {cap} bytes")
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InputInvalid(f"{what} {target} is not valid JSON: {exc}") from exc


def load_task(task_path: str | None, instruction: str | None) -> BenchTask:
    """The task from `--task FILE` or `--instruction TEXT` (exactly one of them)."""
    from pydantic import ValidationError

    from premath.models.bench import BenchTask

    if (task_path is None) == (instruction is None):
        raise InvalidUsage("give exactly one of --task TASK.json or --instruction TEXT")
    if instruction is not None:
        if not instruction.strip():
            raise InvalidUsage("--instruction is empty; give the task's instruction text")
        return BenchTask(instruction=instruction)
    assert task_path is not None
    document = read_json_file(task_path, "task file")
    if not isinstance(document, dict):
        raise InputInvalid(f"task file {task_path} must be a JSON object with an 'instruction'")
    try:
        return BenchTask.model_validate(document)
    except ValidationError as exc:
        raise InputInvalid(f"task file {task_path}: {pydantic_problems(exc)}") from exc


def parse_policy(document: Any, source: str) -> BenchPolicy:
    from pydantic import ValidationError

    from premath.models.bench import BenchPolicy

    if not isinstance(document, dict):
        raise InputInvalid(f"policy {source} must be a JSON object with a 'deny' list")
    try:
        return BenchPolicy.model_validate(document)
    except ValidationError as exc:
        raise InputInvalid(
            f"policy {source} has malformed deny rules: {pydantic_problems(exc)}; "
            'each rule is {"argv_prefix": [...]} or {"glob": "..."} with an optional "reason"'
        ) from exc


def load_policy(path: str | os.PathLike[str] | None) -> BenchPolicy:
    """The policy at `path`, or the empty policy (no deny rules) when None."""
    from premath.models.bench import BenchPolicy

    if path is None:
        return BenchPolicy()
    return parse_policy(read_json_file(path, "policy file"), os.fspath(path))
