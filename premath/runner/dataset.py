"""`tasks.jsonl`: pure domain data, one JSON object per line; each task gets an id.

The id is the task's `id` field (a string, or an integer written as text); without one it is a
stable digest of the task's canonical JSON (`task_<16 hex>`), so the same line always gets the
same id and resume keys stay valid. Duplicate ids are refused: pairing and resume key on them.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from premath.errors import InputInvalid, NotFound
from premath.store.canonical import digest_input
from premath.store.files import ReadCap, read_bounded

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

TASK_CAP = ReadCap("PREMATH_MAX_TASK_BYTES", 64 * 1024 * 1024)
"""One task: a line of the dataset, or the file `premath run` is given."""
MAX_TASK_BYTES = TASK_CAP.default
DATASET_CAP = ReadCap("PREMATH_MAX_DATASET_BYTES", 1 << 30)
"""A whole dataset file (`dataset.path`)."""
_MAX_LISTED = 10


@dataclass(frozen=True, slots=True)
class Task:
    index: int
    """Order among the dataset's tasks, from 0."""
    id: str
    payload: bytes
    """The task's JSON exactly as the dataset line holds it (what the harness reads)."""


def task_id_of(task: dict[str, Any]) -> str | None:
    """The task's own id, a digest when it has none, or None when `id` has an unusable type."""
    given = task.get("id")
    if given is None:
        return "task_" + hashlib.sha256(digest_input(task)).hexdigest()[:16]
    if isinstance(given, bool) or not isinstance(given, str | int):
        return None
    text = str(given)
    return text if text.strip() else None


def load_tasks(path: str | os.PathLike[str], limit: int | None = None) -> list[Task]:
    """Every task of `path` (the first `limit`), or one error listing each bad line."""
    source = Path(path)
    try:
        data = read_bounded(source, DATASET_CAP)
    except FileNotFoundError:
        raise NotFound(
            f"dataset {source} does not exist; dataset.path is relative to the experiment file"
        ) from None
    except OSError as exc:
        raise InputInvalid(f"cannot read dataset {source}: {exc.strerror or exc}") from exc
    return parse_tasks(data.split(b"\n"), source, limit)


def parse_tasks(lines: Sequence[bytes], source: Path, limit: int | None) -> list[Task]:
    problems: list[str] = []
    tasks: list[Task] = []
    first_line: dict[str, int] = {}
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip(b"\r")
        if not line.strip():
            continue
        if len(line) > MAX_TASK_BYTES:
            problems.append(f"line {number}: task over {MAX_TASK_BYTES} bytes")
            continue
        try:
            task = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            problems.append(f"line {number}: not JSON ({exc.msg})")
            continue
        if not isinstance(task, dict):
            problems.append(f"line {number}: a task must be a JSON object")
            continue
        task_id = task_id_of(task)
        if task_id is None:
            problems.append(f"line {number}: `id` must be a non-blank string or an integer")
            continue
        if task_id in first_line:
            hint = "" if "id" in task else " (identical tasks without an id; add ids)"
            problems.append(
                f"line {number}: duplicate task id {task_id!r} (first on line "
                f"{first_line[task_id]}){hint}"
            )
            continue
        first_line[task_id] = number
        tasks.append(Task(index=len(tasks), id=task_id, payload=bytes(line)))
    if problems:
        shown = "\n  - ".join(problems[:_MAX_LISTED])
        more = (
            f"\n  ... and {len(problems) - _MAX_LISTED} more" if len(problems) > _MAX_LISTED else ""
        )
        raise InputInvalid(f"dataset {source} has {len(problems)} bad line(s):\n  - {shown}{more}")
    if not tasks:
        raise InputInvalid(f"dataset {source} has no tasks; add one JSON object per line")
    return tasks[:limit] if limit is not None else tasks
