"""What the loop's steps say about each issue: the dashboard's retry state on a card, and the
issue detail's answer to *why* (specs/observation.md "Why an issue is where it is").

A step's trajectory row names its evidence in `witnessRefs`: `failure://<class>` per failure
class, `git://<branch>@<commit>` for a delivered commit, and for a failed step its record
`.premath/harness_steps/<step>/step.json` (relative to the repository root, the same folder on a
worker and at the authority). The record lists the attempts, each with its retry decision
(`maxAttempts`) and its commands' output files (`attempt-<n>/<name>`), read here from the
record's own folder. Nothing outside that folder is opened, files are read bounded, and a
missing or unreadable record only leaves its fields empty.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import datetime
from typing import Any

import orjson

from premath.errors import PremathError
from premath.models.issue_row import BLOCKING_TYPES
from premath.models.trajectory import is_failed
from premath.store.files import open_regular, read_bounded

Document = dict[str, Any]
STEP_RECORDS = ".premath/harness_steps"
RECORD_NAME = "step.json"
TAIL_BYTES = 4096
"""How much of the end of a failing command's output the detail shows."""
DETAIL_STEPS = 10


def _refs(row: Document) -> list[str]:
    refs = row.get("witnessRefs")
    return [ref for ref in refs if isinstance(ref, str)] if isinstance(refs, list) else []


def step_record_ref(refs: Iterable[str]) -> str | None:
    """The `.premath/harness_steps/<step>/step.json` a row names, if any (one safe folder)."""
    for ref in refs:
        folder, _, name = ref.removeprefix(STEP_RECORDS + "/").partition("/")
        if (
            ref.startswith(STEP_RECORDS + "/")
            and name == RECORD_NAME
            and folder not in ("", ".", "..")
        ):
            return ref
    return None


def delivered(refs: Iterable[str]) -> Document | None:
    """`{branch, commit}` of the last `git://<branch>@<commit>` ref."""
    found = None
    for ref in refs:
        if ref.startswith("git://") and "@" in ref:
            branch, _, commit = ref.removeprefix("git://").rpartition("@")
            found = {"branch": branch, "commit": commit}
    return found


def _record(repo_root: str, ref: str | None) -> tuple[str, Document] | None:
    """(its folder, the record) when the record is a readable JSON object."""
    if ref is None:
        return None
    path = os.path.join(repo_root, ref)
    try:
        value = orjson.loads(read_bounded(path))
    except (OSError, PremathError, orjson.JSONDecodeError):
        return None
    return (os.path.dirname(path), value) if isinstance(value, dict) else None


def _attempts(record: Document | None) -> list[Document]:
    attempts = None if record is None else record.get("attempts")
    return [a for a in attempts if isinstance(a, dict)] if isinstance(attempts, list) else []


def retry_state(record: Document | None) -> Document:
    """`{attempt, maxAttempts}` of the record's last attempt (None where unknown)."""
    attempts = _attempts(record)
    if not attempts:
        return {"attempt": None, "maxAttempts": None}
    last = attempts[-1]
    decision = last.get("decision")
    limit = decision.get("maxAttempts") if isinstance(decision, dict) else None
    number = last.get("attempt")
    return {
        "attempt": number if isinstance(number, int) else len(attempts),
        "maxAttempts": limit if isinstance(limit, int) else None,
    }


def step_facts(row: Document, repo_root: str) -> Document:
    """One step as a card or the detail shows it; a failed step's record is read."""
    refs = _refs(row)
    result_class = str(row.get("resultClass", ""))
    failed = is_failed(result_class)
    record_ref = step_record_ref(refs) if failed else None
    found = _record(repo_root, record_ref)
    return {
        "stepId": row.get("stepId"),
        "resultClass": result_class,
        "failed": failed,
        "finishedAt": row.get("finishedAt"),
        "failureClasses": [
            r.removeprefix("failure://") for r in refs if r.startswith("failure://")
        ],
        "delivered": delivered(refs),
        "stepRecord": record_ref,
        **retry_state(None if found is None else found[1]),
    }


def issue_step_index(items: Iterable[Document], repo_root: str) -> dict[str, Document]:
    """The latest step of each issue among `items` (latest first), for the board's cards."""
    latest: dict[str, Document] = {}
    for row in items:
        issue_id = row.get("issueId")
        if isinstance(issue_id, str) and issue_id and issue_id not in latest:
            latest[issue_id] = step_facts(row, repo_root)
    return latest


def _inside(folder: str, path: str) -> bool:
    real_folder = os.path.realpath(folder)
    return os.path.realpath(path).startswith(real_folder + os.sep)


def _tail(path: str) -> str | None:
    try:
        with open_regular(path) as handle:
            size = os.fstat(handle.fileno()).st_size
            handle.seek(max(0, size - TAIL_BYTES))
            data = handle.read(TAIL_BYTES)
    except (OSError, PremathError):
        return None
    return data.decode("utf-8", errors="replace")


def failing_output(repo_root: str, record_ref: str | None) -> Document | None:
    """The tail of the last attempt's failing command output (stderr, else stdout), read from
    the record's own folder: `{command, name, path, text}`."""
    found = _record(repo_root, record_ref)
    if found is None:
        return None
    folder, record = found
    attempts = _attempts(record)
    commands = attempts[-1].get("commands") if attempts else None
    if not isinstance(commands, list):
        return None
    ran = [c for c in commands if isinstance(c, dict)]
    failing = [c for c in ran if c.get("status") != "ok" or c.get("exitCode")]
    for command in reversed(failing or ran):
        for key in ("stderrPath", "stdoutPath"):
            given = command.get(key)
            if not isinstance(given, str) or not given:
                continue
            # The record names files as its worker saw them; the last two parts
            # (`attempt-<n>/<name>`) are where they are beside the record, here too.
            parts = given.replace("\\", "/").split("/")[-2:]
            path = os.path.join(folder, *parts)
            if not _inside(folder, path):
                continue
            text = _tail(path)
            if text:
                return {
                    "command": command.get("name"),
                    "name": "/".join(parts),
                    "path": os.path.relpath(path, repo_root),
                    "text": text,
                }
    return None


def _issue_rows(trajectory_path: str, issue_id: str) -> list[Document]:
    """Every step row of `issue_id`, latest first (a torn last line is skipped)."""
    from premath.store.jsonl import iter_lines
    from premath.timefmt import parse_strict_rfc3339

    if not os.path.isfile(trajectory_path):
        return []
    rows = []
    for line in iter_lines(trajectory_path):
        try:
            row = orjson.loads(line.text)
        except orjson.JSONDecodeError:
            continue
        if isinstance(row, dict) and row.get("issueId") == issue_id:
            rows.append(row)
    return sorted(
        rows,
        key=lambda r: parse_strict_rfc3339(str(r.get("finishedAt", ""))) or (0, 0),
        reverse=True,
    )


def issue_why(
    issue_id: str, issues_path: str, trajectory_path: str, repo_root: str, now: datetime
) -> Document:
    """The issue detail's *why*: open blockers, notes, steps, the last step's failure and
    output tail, the delivered branch and commit. NotFound when the issue does not exist."""
    from premath.errors import NotFound
    from premath.issues.memory import read_store

    issues = read_store(issues_path, now)
    row = issues.get(issue_id)
    if row is None:
        raise NotFound(f"issue not found: {issue_id}")
    blockers = []
    for edge in row.get("dependencies") or ():
        target = issues.get(edge["depends_on_id"])
        if edge.get("type") in BLOCKING_TYPES and (target is None or target["status"] != "closed"):
            blockers.append(
                {
                    "id": edge["depends_on_id"],
                    "status": None if target is None else target["status"],
                    "title": None if target is None else target["title"],
                }
            )
    steps = [step_facts(r, repo_root) for r in _issue_rows(trajectory_path, issue_id)]
    last = steps[0] if steps else None
    last_failed = next((s for s in steps if s["failed"]), None)
    metadata = row.get("metadata") or {}
    refs = metadata.get("premathWitnessRefs") if isinstance(metadata, dict) else None
    delivery = next((s["delivered"] for s in steps if s["delivered"]), None) or delivered(
        r for r in (refs if isinstance(refs, list) else ()) if isinstance(r, str)
    )
    return {
        "issueId": issue_id,
        "status": row["status"],
        "notes": row.get("notes", ""),
        "openBlockers": blockers,
        "stepCount": len(steps),
        "failedStepCount": sum(1 for s in steps if s["failed"]),
        "steps": steps[:DETAIL_STEPS],
        "lastStep": last,
        "lastFailure": None
        if last_failed is None
        else {**last_failed, "output": failing_output(repo_root, last_failed["stepRecord"])},
        "delivered": delivery,
    }
