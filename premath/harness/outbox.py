"""A remote worker's outbox: its step rows on their way to the authority's trajectory.

A worker whose issue memory is an MCP server (specs/remote-workers.md "The fleet's record")
does not append its steps to a trajectory of its own: each row, with where its step record
lives, is first appended (fsynced) to `.premath/harness_outbox.<worker>.jsonl` in the worker's
home, then delivered with `harness_trajectory_append`, which also carries the step record (the
step document and bounded tails of the step's output, read from the step folder when the row is
delivered). Entries go in file order, each once: a cursor file beside the outbox
(`<outbox>.delivered`, the count of entries the authority took, written atomically after each)
says where delivery resumes, and the authority is idempotent by step id, so an entry sent again
after a lost answer or a crash before the cursor moved is not written twice.

While the authority does not answer, entries wait: delivery stops at the first one it could
not hand over (order is kept) and is tried again after the next step, at the worker's exit,
and at the start of the worker's next run (a worker that exits with entries left says so). An
entry the authority refuses for good (not the worker's step, a step id it holds with other
content) is copied to `<outbox>.refused` with the reason, and delivery goes on; a gate refusal
(the fleet's instruction witness lacks the capability) or a server without the tool stops it,
entries kept, until someone fixes that. One process per worker id uses an outbox.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

import orjson

from premath.errors import AuthorityRefused, AuthorityUnreachable, PremathError
from premath.harness.fleet_record import STEP_RECORD_CAP
from premath.harness.loop_paths import per_worker_path
from premath.store.atomic import write_atomic
from premath.store.canonical import row_bytes
from premath.store.jsonl import append_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.harness.loop_config import WorkerConfig

OUTBOX_NAME = "harness_outbox.jsonl"
TAIL_BYTES = 64 * 1024
"""The most of one output file a step record carries (its end: where failures show)."""
STEP_PATIENCE_S = 10.0
"""How long delivery after a step waits for an authority that does not answer."""
_RECORD_BUDGET = STEP_RECORD_CAP - 64 * 1024
_SKIPPED_SUFFIXES = (".group", ".lock")
Report = Callable[[str], None]


class ShipPostponed(PremathError):
    """The authority did not answer within the call's patience: try again later."""


class ShipRefused(PremathError):
    """The authority refused this row for good (its message says why)."""


@runtime_checkable
class StepShipping(Protocol):
    """An authority that takes a worker's step rows (`McpAuthority`)."""

    def location(self) -> str: ...

    def ship_step(
        self,
        worker_id: str,
        lease_id: str | None,
        row: dict[str, Any],
        files: list[tuple[str, str]],
        *,
        patience_s: float | None,
    ) -> bool:
        """Deliver one row and its record files ((path in the step folder, text)); True when
        written, False when the authority had it already. Raises ShipPostponed, ShipRefused,
        AuthorityRefused or AuthorityUnreachable."""
        ...


@dataclass(frozen=True, slots=True)
class Outbox:
    path: str
    repo_root: str
    """Step folders are named relative to it (the worker's home)."""
    lock_timeout_s: float = 10.0

    @property
    def cursor_path(self) -> str:
        return f"{self.path}.delivered"

    @property
    def refused_path(self) -> str:
        return f"{self.path}.refused"

    def add(
        self,
        worker_id: str,
        lease_id: str | None,
        row: dict[str, Any],
        step_folder: str | None,
        *,
        sync: bool = True,
    ) -> None:
        """Keep one row until it is delivered; durably unless `sync` is False (then the caller
        calls `sync_file(path)` before it relies on it)."""
        entry = {"workerId": worker_id, "leaseId": lease_id, "stepFolder": step_folder, "row": row}
        append_line(self.path, row_bytes(entry), timeout_s=self.lock_timeout_s, sync=sync)

    def entries(self) -> list[dict[str, Any]]:
        """Every entry in order; a torn last line (a crash mid-append) is not one."""
        try:
            with open(self.path, "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            return []
        found = []
        for line in data.splitlines():
            try:
                value = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(value, dict) and isinstance(value.get("row"), dict):
                found.append(value)
        return found

    def delivered(self) -> int:
        try:
            with open(self.cursor_path, "rb") as handle:
                return int(handle.read().strip() or b"0")
        except (FileNotFoundError, ValueError):
            return 0

    def pending(self) -> list[dict[str, Any]]:
        return self.entries()[self.delivered() :]

    def next_step_index(self, worker_id: str) -> int:
        """One past the highest step index among this worker's rows: a new run never reuses a
        step id an earlier run shipped (the authority would refuse it as a conflict)."""
        highest = 0
        for entry in self.entries():
            step_id = str(entry["row"].get("stepId", ""))
            tail = step_id.rsplit(".", 1)[-1]
            if step_id.startswith(f"{worker_id}.") and tail.isdigit():
                highest = max(highest, int(tail))
        return highest + 1

    def deliver(self, to: StepShipping, *, patience_s: float | None, report: Report) -> int:
        """Hand pending entries over in order; how many are left."""
        entries = self.entries()
        done = self.delivered()
        while done < len(entries):
            entry = entries[done]
            try:
                to.ship_step(
                    entry["workerId"],
                    entry.get("leaseId"),
                    entry["row"],
                    self._record(entry.get("stepFolder")),
                    patience_s=patience_s,
                )
            except (ShipPostponed, AuthorityUnreachable, AuthorityRefused):
                break
            except ShipRefused as refused:
                if refused.message.startswith("Unknown tool"):
                    report(
                        f"[outbox] {to.location()} has no harness_trajectory_append (an older "
                        f"premath): step rows stay in {self.path}"
                    )
                    break
                line = row_bytes({**entry, "reason": refused.message})
                append_line(self.refused_path, line, timeout_s=self.lock_timeout_s)
                report(
                    f"[outbox] the authority refused step {entry['row'].get('stepId')}: "
                    f"{refused.message} (kept in {self.refused_path})"
                )
            done += 1
            # A cursor that lags after a power cut only sends entries again: the authority
            # keeps each step id once, so it needs no fsync of its own.
            write_atomic(self.cursor_path, f"{done}\n".encode(), durable=False)
        return len(entries) - done

    def _record(self, step_folder: str | None) -> list[tuple[str, str]]:
        """The step folder's files, each whole or its last bytes, within the per-step cap."""
        if not step_folder:
            return []
        folder = os.path.join(self.repo_root, step_folder)
        names = sorted(
            os.path.relpath(os.path.join(root, name), folder)
            for root, _dirs, files in os.walk(folder)
            for name in files
            if not name.endswith(_SKIPPED_SUFFIXES) and ".tmp" not in name
        )
        if not names:
            return []
        budget = min(TAIL_BYTES, _RECORD_BUDGET // len(names))
        record = []
        for name in names:
            try:
                with open(os.path.join(folder, name), "rb") as handle:
                    size = handle.seek(0, os.SEEK_END)
                    handle.seek(max(0, size - budget))
                    data = handle.read(budget)
            except OSError:
                continue
            text = data.decode("utf-8", errors="replace")
            if size > budget:
                text = f"...[first {size - len(data)} bytes not shipped]\n{text}"
            record.append((name.replace(os.sep, "/"), text))
        return record


def worker_outbox(cfg: WorkerConfig) -> Outbox:
    """This worker's outbox, beside where its trajectory would be."""
    folder = os.path.dirname(cfg.where.paths.trajectory)
    path = per_worker_path(os.path.join(folder, OUTBOX_NAME), cfg.worker_id)
    return Outbox(path, cfg.where.paths.repo_root, cfg.limits.lock_timeout_s)


def record_step(
    cfg: WorkerConfig,
    *,
    lease_id: str | None,
    step_folder: str | None,
    now: datetime,
    **fields: Any,
) -> dict[str, Any]:
    """A step's trajectory row: appended to the local trajectory where issue memory is local;
    for a remote authority kept in the outbox and delivered (with the step folder's record)."""
    from premath.record.trajectory import append_step, step_row

    if not isinstance(cfg.authority.memory, StepShipping):
        return append_step(
            cfg.where.paths.trajectory, now=now, lock_timeout=cfg.limits.lock_timeout_s, **fields
        )
    row = step_row(cfg.where.paths.trajectory, now=now, **fields)
    outbox = worker_outbox(cfg)
    ship_kept(outbox, cfg.authority.memory, cfg.worker_id, lease_id, row, step_folder)
    return row


def ship_kept(
    outbox: Outbox,
    authority: StepShipping,
    worker_id: str,
    lease_id: str | None,
    row: dict[str, Any],
    step_folder: str | None,
) -> int:
    """Keep the row in the outbox and deliver what is pending (within `STEP_PATIENCE_S`); the
    outbox's fsync runs while the delivery waits for the authority, and is done before this
    returns: the row is then at the authority or durably kept. How many rows are left."""
    import threading

    from premath.store.jsonl import sync_file

    outbox.add(worker_id, lease_id, row, step_folder, sync=False)
    syncing = threading.Thread(target=sync_file, args=(outbox.path,), daemon=True)
    syncing.start()
    try:
        return outbox.deliver(authority, patience_s=STEP_PATIENCE_S, report=lambda _line: None)
    finally:
        syncing.join()


@contextmanager
def delivering(cfg: WorkerConfig, report: Report) -> Iterator[int]:
    """Around a worker's run: deliver what an earlier run left and yield the first step index
    this run may use; at the end deliver again and say what is left (kept for the next run)."""
    if not isinstance(cfg.authority.memory, StepShipping):
        yield 1
        return
    authority = cfg.authority.memory
    outbox = worker_outbox(cfg)
    if outbox.pending():
        left = outbox.deliver(authority, patience_s=None, report=report)
        report(f"[worker:{cfg.worker_id}] delivered an earlier run's step rows ({left} left)")
    try:
        yield outbox.next_step_index(cfg.worker_id)
    except BaseException:
        _final_delivery(cfg, outbox, authority, report, patience_s=STEP_PATIENCE_S)
        raise
    _final_delivery(cfg, outbox, authority, report, patience_s=None)


def _final_delivery(
    cfg: WorkerConfig,
    outbox: Outbox,
    authority: StepShipping,
    report: Report,
    *,
    patience_s: float | None,
) -> None:
    if not outbox.pending():
        return
    try:
        left = outbox.deliver(authority, patience_s=patience_s, report=report)
    except PremathError:
        left = len(outbox.pending())
    if left:
        report(
            f"[worker:{cfg.worker_id}] {left} step row(s) not delivered to the authority at "
            f"{authority.location()}: kept in {outbox.path}; the next run of worker "
            f"{cfg.worker_id} delivers them"
        )
