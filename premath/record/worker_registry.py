"""The fleet's worker registry at the authority (specs/remote-workers.md "Workers").

One JSON document beside the issues file, `.premath/harness_workers.json`, keyed by worker id:
who registered (host or node, pid, premath version, when it started), its last heartbeat (phase,
issue, attempt n of m) and, once it deregistered, why. Every change is a read-modify-write
under the document's own `<path>.lock` and an atomic rewrite, as the harness artifacts are
written (store/locks.py, store/atomic.py); readers take no lock.

A flood of heartbeats is not stored each: a token bucket per worker (in the server's memory)
lets a short burst through, then one a second; the others are answered `stored: false` and
counted into the next stored beat's `heartbeatsDropped`. Registrations have a bucket of their
own; one over it is refused (`worker.rate_limited`). The registry holds at most
`MAX_WORKERS` entries: the longest-gone worker makes room, and a registry full of live
workers refuses another.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, get_args

from premath.errors import ArtifactInvalid, InputInvalid, IoFailure, PremathError
from premath.store.documents import DocumentMalformed, DocumentUnreadable, read_document
from premath.timefmt import epoch_nanos, format_autosi_z

Document = dict[str, Any]
Phase = Literal["claiming", "working", "verifying", "closing", "idle"]
PHASES: tuple[str, ...] = get_args(Phase)
REGISTRY_NAME = "harness_workers.json"
REGISTRY_KIND = "premath.harness.workers.v1"
DEFAULT_HEARTBEAT_S = 10.0
MIN_HEARTBEAT_S = 0.5
MAX_HEARTBEAT_S = 3600.0
MAX_WORKERS = 1024
MAX_TEXT = 256
"""Longest host, node, version, issue id or worker id kept; a reason is cut to `MAX_REASON`."""
MAX_REASON = 1024
HEARTBEAT_BURST = 4
HEARTBEAT_REFILL_S = 1.0
MAX_BUCKETS = 4096
NOT_REGISTERED = "worker.not_registered"


class WorkerNotRegistered(PremathError):
    """A heartbeat or deregistration for a worker the registry does not hold as running."""

    code = "not_found"


def registry_path(issues_path: str) -> str:
    """The registry beside the issues file (the project's memory)."""
    return os.path.join(os.path.dirname(issues_path), REGISTRY_NAME)


@dataclass(frozen=True, slots=True)
class Registration:
    worker_id: str
    host: str
    node: str
    pid: int | None
    premath_version: str
    started_at: str
    heartbeat_s: float = DEFAULT_HEARTBEAT_S


@dataclass(frozen=True, slots=True)
class Beat:
    worker_id: str
    phase: Phase
    issue_id: str | None = None
    attempt: int | None = None
    max_attempts: int | None = None


def _text(name: str, value: str | None, limit: int = MAX_TEXT) -> str:
    text = (value or "").strip()
    if len(text) > limit:
        raise InputInvalid(f"{name} is longer than {limit} characters")
    return text


def checked_worker_id(worker_id: str) -> str:
    cleaned = _text("workerId", worker_id)
    if not cleaned:
        raise InputInvalid("workerId must not be empty")
    return cleaned


def checked_phase(phase: str) -> Phase:
    if phase not in PHASES:
        raise InputInvalid(f"phase must be one of {', '.join(PHASES)} (got {phase!r})")
    return phase  # type: ignore[return-value]


class HeartbeatLimiter:
    """A token bucket per worker id: `burst` beats at once, then one per `refill_s`."""

    def __init__(self, burst: int = HEARTBEAT_BURST, refill_s: float = HEARTBEAT_REFILL_S) -> None:
        self.burst, self.refill_s = burst, refill_s
        self._buckets: dict[str, tuple[float, float]] = {}
        self._dropped: dict[str, int] = {}
        self._lock = threading.Lock()

    def admit(self, worker_id: str) -> bool:
        """Whether this beat is stored; a refused one is counted for the next stored beat."""
        now = time.monotonic()
        with self._lock:
            if len(self._buckets) > MAX_BUCKETS:
                self._forget_full(now)
            tokens, at = self._buckets.get(worker_id, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - at) / self.refill_s)
            if tokens < 1.0:
                self._buckets[worker_id] = (tokens, now)
                self._dropped[worker_id] = self._dropped.get(worker_id, 0) + 1
                return False
            self._buckets[worker_id] = (tokens - 1.0, now)
            return True

    def _forget_full(self, now: float) -> None:
        """Drop the buckets that have refilled (nobody beat lately): memory stays bounded
        however many ids a caller makes up."""
        for key, (tokens, at) in list(self._buckets.items()):
            if tokens + (now - at) / self.refill_s >= self.burst:
                del self._buckets[key]
                self._dropped.pop(key, None)

    def take_dropped(self, worker_id: str) -> int:
        with self._lock:
            return self._dropped.pop(worker_id, 0)


def read_registry(path: str) -> dict[str, Document]:
    """Every entry by worker id ({} when there is no registry yet)."""
    try:
        document = read_document(path)
    except DocumentUnreadable as exc:
        if exc.missing:
            return {}
        raise IoFailure(f"failed to read worker registry {path}: {exc.detail}") from exc
    except DocumentMalformed as exc:
        raise ArtifactInvalid(f"failed to parse worker registry {path}: {exc}") from exc
    workers = document.get("workers") if isinstance(document, dict) else None
    if not isinstance(workers, dict) or not all(isinstance(w, dict) for w in workers.values()):
        raise ArtifactInvalid(f"failed to parse worker registry {path}: `workers` is no object")
    return workers


class WorkerRegistry:
    """The registry file at `path`; one instance per server (it owns the heartbeat limiter)."""

    def __init__(
        self, path: str, lock_timeout_s: float, limiter: HeartbeatLimiter | None = None
    ) -> None:
        self.path = path
        self.lock_timeout_s = lock_timeout_s
        self.limiter = limiter or HeartbeatLimiter()
        self.registrations = HeartbeatLimiter()
        """Registrations have a bucket of their own: a worker the registry forgot registers
        again at once, however fast it was beating."""

    def _update(self, change: Any) -> Document:
        """Read, change (`change(workers)` returns the entry it changed), write; under the lock."""
        from premath.store.atomic import write_atomic
        from premath.store.canonical import document_bytes
        from premath.store.locks import artifact_lock

        with artifact_lock(self.path, self.lock_timeout_s):
            workers = read_registry(self.path)
            entry: Document = change(workers)
            document = {"schema": 1, "registryKind": REGISTRY_KIND, "workers": workers}
            try:
                write_atomic(self.path, document_bytes(document))
            except OSError as exc:
                raise IoFailure(f"failed to write worker registry {self.path}: {exc}") from None
        return entry

    def register(self, registration: Registration, now: datetime) -> Document:
        """A worker starts (or starts again, after an authority restart): a running entry."""
        worker_id = checked_worker_id(registration.worker_id)
        if not MIN_HEARTBEAT_S <= registration.heartbeat_s <= MAX_HEARTBEAT_S:
            raise InputInvalid(
                f"heartbeatSeconds must be in [{MIN_HEARTBEAT_S:g}, {MAX_HEARTBEAT_S:g}]"
            )
        stamp = format_autosi_z(epoch_nanos(now))
        fields = {
            "workerId": worker_id,
            "host": _text("host", registration.host),
            "node": _text("node", registration.node),
            "pid": registration.pid,
            "premathVersion": _text("premathVersion", registration.premath_version),
            "startedAt": _text("startedAt", registration.started_at),
            "heartbeatSeconds": registration.heartbeat_s,
        }
        if not self.registrations.admit(worker_id):
            raise InputInvalid(
                f"[failureClass=worker.rate_limited] worker {worker_id} registers too often: "
                "register once per start, then heartbeat"
            )

        def change(workers: dict[str, Document]) -> Document:
            old = workers.get(worker_id)
            same_run = old is not None and all(
                old.get(key) == fields[key] for key in ("host", "node", "pid", "startedAt")
            )
            if old is None:
                _make_room(workers, worker_id)
            entry = {
                **fields,
                "registeredAt": stamp,
                "registrations": (old or {}).get("registrations", 0) + 1 if same_run else 1,
                "state": "running",
                "lastHeartbeatAt": stamp,
                "heartbeatCount": (old or {}).get("heartbeatCount", 0) if same_run else 0,
                "heartbeatsDropped": (old or {}).get("heartbeatsDropped", 0) if same_run else 0,
                "phase": (old or {}).get("phase", "idle") if same_run else "idle",
                "issueId": (old or {}).get("issueId") if same_run else None,
                "attempt": (old or {}).get("attempt") if same_run else None,
                "maxAttempts": (old or {}).get("maxAttempts") if same_run else None,
                "goneAt": None,
                "goneReason": None,
            }
            workers[worker_id] = entry
            return entry

        return self._update(change)

    def heartbeat(self, beat: Beat, now: datetime) -> tuple[bool, Document | None]:
        """(stored, the entry as stored) of one beat; a beat over the rate is answered
        (False, None) and stores nothing. A worker not running here is refused (register)."""
        worker_id = checked_worker_id(beat.worker_id)
        phase = checked_phase(beat.phase)
        issue_id = _text("issueId", beat.issue_id) or None
        self._running(read_registry(self.path), worker_id)  # a stranger costs no bucket
        if not self.limiter.admit(worker_id):
            return False, None
        dropped = self.limiter.take_dropped(worker_id)
        stamp = format_autosi_z(epoch_nanos(now))

        def change(workers: dict[str, Document]) -> Document:
            entry = self._running(workers, worker_id)
            entry.update(
                lastHeartbeatAt=stamp,
                heartbeatCount=entry.get("heartbeatCount", 0) + 1,
                heartbeatsDropped=entry.get("heartbeatsDropped", 0) + dropped,
                phase=phase,
                issueId=issue_id,
                attempt=beat.attempt,
                maxAttempts=beat.max_attempts,
            )
            return entry

        return True, self._update(change)

    def deregister(self, worker_id: str, reason: str, now: datetime) -> Document:
        """The worker exits: `gone`, with its reason; its last phase and issue stay."""
        worker_id = checked_worker_id(worker_id)
        cleaned = (reason or "").strip()[:MAX_REASON] or "unspecified"
        stamp = format_autosi_z(epoch_nanos(now))

        def change(workers: dict[str, Document]) -> Document:
            entry = self._running(workers, worker_id)
            entry.update(state="gone", goneAt=stamp, goneReason=cleaned, phase="idle")
            return entry

        return self._update(change)

    def _running(self, workers: dict[str, Document], worker_id: str) -> Document:
        entry = workers.get(worker_id)
        if entry is None or entry.get("state") != "running":
            where = "is not registered" if entry is None else "has deregistered"
            raise WorkerNotRegistered(
                f"[failureClass={NOT_REGISTERED}] worker {worker_id} {where} at this authority: "
                "register it again (harness_worker_register)"
            )
        return entry


def _make_room(workers: dict[str, Document], newcomer: str) -> None:
    """Drop the longest-gone entries while the registry is full; refuse when all run."""
    while len(workers) >= MAX_WORKERS:
        gone = [(entry.get("goneAt") or "", key) for key, entry in workers.items()]
        gone = [pair for pair in gone if workers[pair[1]].get("state") == "gone"]
        if not gone:
            raise InputInvalid(
                f"the worker registry holds {MAX_WORKERS} running workers: {newcomer} cannot "
                "register until one deregisters"
            )
        del workers[min(gone)[1]]
