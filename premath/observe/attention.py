"""What needs a person now: the surface's live attention (specs/observation.md "Live attention").

The reference's summary judges leases at its reference time (the latest issue or witness time,
quirk 21) and never reads the trajectory, so a fleet with a dead worker's lease, open
escalations and a run of failures read "needs attention: false". A live build (the authority's
`--live` server, `observe-build --live-attention`) adds `summary.live` from the state at the
current clock: leases expired by now, open escalations, silent workers, the failure share of the
latest steps and the KPI's decision. Its reasons turn `needsAttention` on and, unless the state is
`rejected` or `error`, set `topFailureClass` (the recent window's most frequent failed class,
else the first reason); `coherence` keeps the reference's meaning (D30a-2).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from premath.errors import PremathError
from premath.observe.facts import Document, Instant, IssueFacts
from premath.timefmt import epoch_nanos, format_seconds_z

RECENT_STEPS = 20
"""The recent window: the latest steps of the trajectory, whatever their age."""
MIN_RECENT_STEPS = 4
"""Fewer recent steps than this say nothing about a failure share."""
FAILURE_SHARE_LIMIT = 0.5
"""At or above this share of failed recent steps, the loop needs a person."""
KPI_ATTENTION = {"rollback": "kpi_rollback", "watch": "kpi_watch"}


@dataclass(frozen=True)
class TrajectoryFacts:
    """What the live attention reads of the trajectory."""

    recent: tuple[tuple[str, bool], ...]
    """(resultClass, failed) of the latest `RECENT_STEPS` steps, latest first."""
    kpi_decision: str | None
    """The KPI's `decision.state` at the current clock (None: no KPI could be computed)."""


@dataclass(frozen=True)
class LiveInputs:
    """A live build's clock and trajectory (None: no trajectory to read)."""

    now: datetime
    trajectory: TrajectoryFacts | None
    silent_workers: tuple[str, ...] = ()
    """The fleet registry's workers whose heartbeats stopped (premath/record/worker_board.py)."""


def trajectory_facts(items: Sequence[Document], kpi: Document | None) -> TrajectoryFacts:
    """From `harness-trajectory query --mode latest` items (latest first) and a KPI document,
    as the dashboard already holds them."""
    from premath.models.trajectory import is_failed

    recent = tuple(
        (str(item.get("resultClass", "")), is_failed(str(item.get("resultClass", ""))))
        for item in items[:RECENT_STEPS]
    )
    decision = kpi.get("decision") if isinstance(kpi, dict) else None
    state = decision.get("state") if isinstance(decision, dict) else None
    return TrajectoryFacts(recent, state if isinstance(state, str) else None)


def read_trajectory_facts(path: str, now: datetime) -> TrajectoryFacts | None:
    """The facts of the trajectory at `path`; None when it cannot be read (the dashboard and
    `harness-kpi` say why)."""
    from premath.record.kpi import kpi_report
    from premath.record.trajectory import query_trajectory

    try:
        latest = query_trajectory(path, "latest", RECENT_STEPS)
        kpi = kpi_report(trajectory_path=path, now=now)
    except PremathError:
        return None
    return trajectory_facts(latest["items"], kpi)


def _recent_window(trajectory: TrajectoryFacts | None) -> Document:
    recent = () if trajectory is None else trajectory.recent
    failed = [result_class for result_class, is_failed in recent if is_failed]
    counts = Counter(failed)
    # Ties go to the most recent class: `failed` is latest first and Counter keeps that order.
    top = max(counts, key=lambda name: counts[name]) if counts else None
    return {
        "steps": len(recent),
        "failedSteps": len(failed),
        "failureShare": round(len(failed) / len(recent), 6) if recent else 0.0,
        "topFailureClass": top,
    }


def _now_instant(now: datetime) -> Instant:
    nanos = epoch_nanos(now)
    return nanos // 1_000_000_000, nanos % 1_000_000_000


def live_attention(rows: Iterable[IssueFacts], live: LiveInputs) -> Document:
    """The `summary.live` document: reasons in a fixed order, and what each one counted."""
    now = _now_instant(live.now)
    stale, escalations = [], []
    for row in rows:
        if row.status == "closed":
            continue
        expiry = None if row.lease is None else row.lease.expiry
        if expiry is not None and expiry <= now:
            stale.append(row.id)
        if row.waits_for_person:
            escalations.append(row.id)
    window = _recent_window(live.trajectory)
    kpi_decision = None if live.trajectory is None else live.trajectory.kpi_decision
    failing = window["steps"] >= MIN_RECENT_STEPS and window["failureShare"] >= FAILURE_SHARE_LIMIT
    reasons = [
        reason
        for reason, holds in (
            ("stale_leases_now", bool(stale)),
            ("escalations_open", bool(escalations)),
            ("workers_silent", bool(live.silent_workers)),
            ("recent_failure_share_high", failing),
            (KPI_ATTENTION.get(kpi_decision or ""), kpi_decision in KPI_ATTENTION),
        )
        if holds and reason is not None
    ]
    return {
        "checkedAt": format_seconds_z(live.now),
        "attentionReasons": reasons,
        "staleLeaseIssueIds": sorted(stale),
        "escalationIssueIds": sorted(escalations),
        "silentWorkerIds": sorted(live.silent_workers),
        "recentWindow": window,
        "kpiDecision": kpi_decision,
    }


def next_lease_expiry(rows: Iterable[IssueFacts], now: Instant) -> Instant | None:
    """The first lease expiry after `now` among issues not closed: when the clock next changes
    the stale leases (None: never)."""
    future = [
        row.lease.expiry
        for row in rows
        if row.status != "closed"
        and row.lease is not None
        and row.lease.expiry is not None
        and row.lease.expiry > now
    ]
    return min(future, default=None)


def same_attention(first: Document | None, second: Document | None) -> bool:
    """Equal but for `checkedAt`: a live server rewrites the surface only when this changes."""
    if first is None or second is None:
        return first is second
    return {**first, "checkedAt": None} == {**second, "checkedAt": None}
