"""The fleet's record at the authority: every remote worker's trajectory rows and step records
land here, through the MCP tool `harness_trajectory_append` (specs/remote-workers.md "The
fleet's record").

One call carries one step: its trajectory row (the row `harness-trajectory append` writes) and
its step record (the step document and bounded tails of its work/verify output). The record is
written first, under `<dir of the trajectory>/harness_steps/<step folder>/`, the same relative
folder the worker's own loop used, so a path an escalation note or a witness ref names resolves
here; then the row is appended. Nothing in a record is executed or interpreted: it is stored as
bytes, within caps per step and in total.

Appends are idempotent by step id: a row whose step id is already in the trajectory with the
same bytes is not written again (a retried call, a worker's outbox delivering again after a lost
answer); the same step id with other bytes is refused (`trajectory.step_conflict`). A row must
be the calling worker's (its step id starts with the worker id) and name an issue the authority
granted that worker a lease on: the grants are journalled beside the issues file
(`harness_lease_grants.jsonl`) when the claim is written, so the check holds after the issue was
closed or given back, and across restarts. Rows are accepted in any order (each carries its own
times; queries order by `finishedAt`); a worker's outbox sends its own in order.

The step-id index and the grants are read incrementally (only appended bytes) under one lock of
this process: a server serialises its appends; other writers of the trajectory (a local loop on
the authority's host) append rows of their own step ids.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import orjson

from premath.errors import InputInvalid, PremathError
from premath.harness.refs import step_folder_name
from premath.models.serde import SchemaViolation
from premath.models.trajectory import STEP_SCHEMA, StepInvalid, parse_step
from premath.models.vocabulary import STEP_KIND
from premath.store.atomic import write_atomic
from premath.store.canonical import row_bytes
from premath.store.jsonl import append_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

STEP_RECORD_CAP = 1024 * 1024
"""Bytes of one step's record (all its files): a worker ships tails, never whole logs."""
STEP_RECORDS_TOTAL_CAP = 1024 * 1024 * 1024
"""Bytes of every step record under the authority's `harness_steps/`."""
MAX_STEP_FILES = 64
GRANTS_NAME = "harness_lease_grants.jsonl"
_FILE_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_MAX_FILE_DEPTH = 3


class RecordRefused(InputInvalid):
    """A row or step record the authority refuses; the message leads with its failure class."""

    def __init__(self, failure_class: str, message: str) -> None:
        super().__init__(f"[failureClass={failure_class}] {message}")
        self.failure_class = failure_class


@dataclass(frozen=True, slots=True)
class StepFile:
    """One file of a step record: its path inside the step folder and its text."""

    path: str
    text: str


@dataclass(frozen=True, slots=True)
class Appended:
    row: dict[str, Any]
    appended: bool
    """False: the same row was already there (a retried call); nothing was written."""
    record_path: str | None
    """The step folder relative to the repository root (None: no record shipped)."""
    record_bytes: int = 0


@dataclass(slots=True)
class _Tail:
    """The rows appended to a JSONL file since we last looked (re-read whole when replaced)."""

    path: str
    identity: tuple[int, int] | None = None
    offset: int = 0

    def new_lines(self) -> Iterator[bytes]:
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            return
        identity = (info.st_dev, info.st_ino)
        if identity != self.identity or info.st_size < self.offset:
            self.identity, self.offset = identity, 0
        if info.st_size == self.offset:
            return
        with open(self.path, "rb") as handle:
            handle.seek(self.offset)
            data = handle.read(info.st_size - self.offset)
        end = data.rfind(b"\n") + 1  # an unterminated tail is read again once it ends
        self.offset += end
        yield from (line.rstrip(b"\r") for line in data[:end].splitlines() if line.strip())

    def new_rows(self) -> Iterator[Any]:
        for line in self.new_lines():
            try:
                yield line, orjson.loads(line)
            except orjson.JSONDecodeError:
                continue


@dataclass(slots=True)
class FleetRecord:
    """The authority's trajectory, step records and lease grants (one per server)."""

    trajectory_path: str
    issues_path: str
    lock_timeout_s: float = 10.0
    step_cap: int = STEP_RECORD_CAP
    total_cap: int = STEP_RECORDS_TOTAL_CAP
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _rows: _Tail = field(init=False)
    _grants_tail: _Tail = field(init=False)
    _digests: dict[str, bytes] = field(default_factory=dict)
    _grants: set[tuple[str, str, str]] = field(default_factory=set)
    _records_bytes: int | None = None

    def __post_init__(self) -> None:
        self._rows = _Tail(self.trajectory_path)
        self._grants_tail = _Tail(self.grants_path)

    @property
    def grants_path(self) -> str:
        return os.path.join(os.path.dirname(os.path.abspath(self.issues_path)), GRANTS_NAME)

    @property
    def steps_dir(self) -> str:
        return os.path.join(os.path.dirname(os.path.abspath(self.trajectory_path)), "harness_steps")

    # --- grants ----------------------------------------------------------------------------------

    def note_grant(self, issue_id: str, owner: str, lease_id: str, *, timeout_s: float) -> None:
        """Journal a lease the authority granted (called as the claim is written, before the
        issues file is saved: a grant on disk may not have landed, a landed one is on disk).
        Within a group commit the journal is fsynced once for the group, before its rewrite."""
        from premath.store.group_commit import sync_before_write

        line = row_bytes({"issueId": issue_id, "owner": owner, "leaseId": lease_id})
        deferred = sync_before_write(self.grants_path)
        append_line(self.grants_path, line, timeout_s=timeout_s, sync=not deferred)

    def _granted(self, issue_id: str, owner: str, lease_id: str) -> bool:
        for _line, row in self._grants_tail.new_rows():
            if isinstance(row, dict):
                grant = (str(row.get("issueId")), str(row.get("owner")), str(row.get("leaseId")))
                self._grants.add(grant)
        return (issue_id, owner, lease_id) in self._grants

    # --- appends ---------------------------------------------------------------------------------

    def append(
        self,
        worker_id: str,
        lease_id: str | None,
        fields: Any,
        files: list[StepFile],
        *,
        timeout_s: float,
        holds_now: Callable[[str, str, str], bool] = lambda _i, _w, _l: False,
    ) -> Appended:
        """Store the step record, then append the row (see the module doc). `holds_now` tells
        whether the worker holds the issue under `lease_id` in the store at this moment (a
        lease granted before the journal existed)."""
        row = _checked_row(fields)
        step_id = row["stepId"]
        if not step_id.startswith(f"{worker_id}."):
            raise RecordRefused(
                "trajectory.worker_mismatch",
                f"step {step_id} is not worker {worker_id}'s: a worker appends only its own "
                f"steps (step ids `{worker_id}.<issue>.<n>`)",
            )
        data = row_bytes(row)
        digest = _digest(data)
        with self._lock:
            issue_id = row.get("issueId")
            if issue_id is not None and not (
                lease_id
                and (
                    self._granted(issue_id, worker_id, lease_id)
                    or holds_now(issue_id, worker_id, lease_id)
                )
            ):
                raise RecordRefused(
                    "trajectory.issue_not_held",
                    f"worker {worker_id} never held {issue_id} under lease {lease_id or '(none)'} "
                    "at this authority: a step row names an issue its worker claimed here",
                )
            self._index_rows()
            known = self._digests.get(step_id)
            if known is not None:
                if known != digest:
                    raise RecordRefused(
                        "trajectory.step_conflict",
                        f"step {step_id} is already in {self.trajectory_path} with other content; "
                        "a step id names one step (the row was not written)",
                    )
                return Appended(row, False, self._record_name(step_id) if files else None)
            record_bytes = self._store_record(step_id, files)
            try:
                append_line(self.trajectory_path, data, timeout_s=timeout_s)
            except OSError as exc:
                raise PremathError(
                    f"failed to append harness trajectory row at {self.trajectory_path}: {exc}"
                ) from None
            self._digests[step_id] = digest
            record = self._record_name(step_id) if files else None
            return Appended(row, True, record, record_bytes)

    def _index_rows(self) -> None:
        """Step id -> digest of its line. Rows we and the loop write are `row_bytes` of the
        normalised row, so a line's bytes are the row's: no row is parsed twice."""
        for line, value in self._rows.new_rows():
            step_id = value.get("stepId") if isinstance(value, dict) else None
            if isinstance(step_id, str):
                self._digests.setdefault(step_id.strip(), _digest(line + b"\n"))

    def _record_name(self, step_id: str) -> str:
        return f".premath/harness_steps/{step_folder_name(step_id)}"

    def _store_record(self, step_id: str, files: list[StepFile]) -> int:
        """Write the step's files (checked first: a refused record writes nothing)."""
        if not files:
            return 0
        if len(files) > MAX_STEP_FILES:
            raise RecordRefused(
                "trajectory.step_record_invalid",
                f"step {step_id} ships {len(files)} files; at most {MAX_STEP_FILES}",
            )
        encoded = [(_checked_file_path(step_id, f.path), f.text.encode("utf-8")) for f in files]
        size = sum(len(data) for _, data in encoded)
        if size > self.step_cap:
            raise RecordRefused(
                "trajectory.step_record_too_large",
                f"step {step_id}'s record is {size} bytes, over the cap of {self.step_cap} bytes "
                "per step: ship the tails of its output, not whole logs",
            )
        folder = os.path.join(self.steps_dir, step_folder_name(step_id))
        used = self._used_bytes()
        if used + size > self.total_cap:
            raise RecordRefused(
                "trajectory.step_records_full",
                f"step records under {self.steps_dir} hold {used} bytes; {size} more would pass "
                f"the cap of {self.total_cap} bytes: remove old step folders there",
            )
        for relative, data in encoded:
            target = os.path.join(folder, relative)
            try:
                replaced = os.path.getsize(target)
            except OSError:
                replaced = 0
            # Not fsynced on its own: the row's fsynced append follows (a power cut may lose a
            # record's tail, never a row; a killed server loses neither).
            write_atomic(target, data, durable=False)
            self._records_bytes = used = used + len(data) - replaced
        return size

    def _used_bytes(self) -> int:
        if self._records_bytes is None:
            total = 0
            for root, _dirs, names in os.walk(self.steps_dir):
                for name in names:
                    try:
                        total += os.lstat(os.path.join(root, name)).st_size
                    except OSError:
                        continue
            self._records_bytes = total
        return self._records_bytes


def _digest(line: bytes) -> bytes:
    return hashlib.blake2b(line, digest_size=16).digest()


def _checked_row(fields: Any) -> dict[str, Any]:
    """The row as `harness-trajectory append` would write it (its checks, its messages)."""
    if not isinstance(fields, dict):
        raise RecordRefused("trajectory.row_invalid", "row must be a JSON object")
    try:
        return parse_step({"schema": STEP_SCHEMA, "stepKind": STEP_KIND, **fields})
    except (SchemaViolation, StepInvalid) as exc:
        raise RecordRefused("trajectory.row_invalid", f"invalid trajectory row: {exc}") from None


def _checked_file_path(step_id: str, path: str) -> str:
    """A record file's path inside its step folder: plain names, at most three deep."""
    parts = path.split("/")
    if len(parts) > _MAX_FILE_DEPTH or not all(_FILE_PART.fullmatch(part) for part in parts):
        raise RecordRefused(
            "trajectory.step_record_invalid",
            f"step {step_id}: record file {path!r} is not a plain relative path inside the "
            "step folder (names of letters, digits, `.`, `_`, `-`, at most three deep)",
        )
    return os.path.join(*parts)
