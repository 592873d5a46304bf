"""The fleet's workers as people see them (specs/remote-workers.md "Workers"): each registry
entry with its status now (`running`, `silent` when its heartbeats stopped for
`SILENT_AFTER_BEATS` intervals, `gone` once it deregistered), the time since its last beat, and
its steps, closes and pass rate in the KPI's window of the trajectory; and the attention reasons
silent workers give. One document serves the MCP tool `harness_workers`, the observation route
`/workers`, the dashboard's worker panel and `harness-loop status`."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from premath.errors import PremathError
from premath.models.kpi import DEFAULT_WINDOW_HOURS
from premath.models.trajectory import is_failed
from premath.record.worker_registry import read_registry
from premath.timefmt import epoch_nanos, format_seconds_z, parse_strict_rfc3339

Document = dict[str, Any]
WORKERS_KIND = "premath.harness.workers_view.v1"
SILENT_AFTER_BEATS = 3


def _nanos(stamp: str | None) -> int | None:
    parsed = parse_strict_rfc3339(stamp or "")
    return None if parsed is None else parsed[0] * 1_000_000_000 + parsed[1]


def worker_status(entry: Document, now_ns: int) -> tuple[str, float | None]:
    """(`running` | `silent` | `gone`, seconds since the last heartbeat)."""
    last = _nanos(entry.get("lastHeartbeatAt"))
    since = None if last is None else max(0.0, (now_ns - last) / 1e9)
    if entry.get("state") == "gone":
        return "gone", since
    interval = float(entry.get("heartbeatSeconds") or 0) or 10.0
    if since is None or since > SILENT_AFTER_BEATS * interval:
        return "silent", since
    return "running", since


def step_stats(trajectory_path: str | None) -> tuple[dict[str, Document], Document | None]:
    """Per worker: steps, closes and pass rate in the KPI's window (the `window_hours` before
    the latest row, premath.record.kpi), and that window; ({}, None) without rows."""
    from premath.record.kpi import load_kpi_rows, worker_id_of

    rows = load_kpi_rows(trajectory_path) if trajectory_path else []
    if not rows:
        return {}, None
    end = rows[0].finished_at
    start = end - timedelta(hours=DEFAULT_WINDOW_HOURS)
    stats: dict[str, Document] = {}
    for row in rows:
        if not start <= row.finished_at <= end or not row.issue_id:
            continue
        worker = stats.setdefault(
            worker_id_of(row.step_id, row.issue_id), {"steps": 0, "closes": 0}
        )
        worker["steps"] += 1
        worker["closes"] += 0 if is_failed(row.result_class) else 1
    for worker in stats.values():
        worker["passRate"] = round(worker["closes"] / worker["steps"], 6)
    window = {
        "windowHours": DEFAULT_WINDOW_HOURS,
        "windowStart": format_seconds_z(start),
        "windowEnd": format_seconds_z(end),
    }
    return stats, window


def attention_reasons(workers: list[Document]) -> list[str]:
    """One line per silent worker: what it was doing when it went quiet."""
    reasons = []
    for worker in workers:
        if worker["status"] != "silent":
            continue
        doing = worker.get("phase") or "idle"
        if worker.get("issueId"):
            doing += f" on {worker['issueId']}"
        since = worker.get("secondsSinceHeartbeat")
        quiet = "never heartbeat" if since is None else f"no heartbeat for {since:.0f} s"
        reasons.append(f"worker {worker['workerId']} is silent ({quiet}; last {doing})")
    return reasons


def silent_worker_reasons(issues_path: str, now: datetime) -> list[str]:
    """The attention reasons of the project's silent workers now (none without a registry)."""
    from premath.record.worker_registry import registry_path

    rows = worker_rows(read_registry(registry_path(issues_path)), {}, epoch_nanos(now))
    return attention_reasons(rows)


def silent_workers_at(issues_path: str, now: datetime) -> tuple[str, ...]:
    """The project's silent workers now, by id (none without a registry)."""
    from premath.record.worker_registry import registry_path

    return silent_worker_ids(read_registry(registry_path(issues_path)), now)


def silent_worker_ids(entries: dict[str, Document], now: datetime) -> tuple[str, ...]:
    """The registry's silent workers now, by id: what the summary's live attention counts
    (specs/observation.md "Live attention")."""
    now_ns = epoch_nanos(now)
    return tuple(
        worker_id
        for worker_id in sorted(entries)
        if worker_status(entries[worker_id], now_ns)[0] == "silent"
    )


def worker_rows(
    entries: dict[str, Document], stats: dict[str, Document], now_ns: int
) -> list[Document]:
    """Each registry entry (by id) with its status, time since its last beat and its steps."""
    empty = {"steps": 0, "closes": 0, "passRate": None}
    rows = []
    for worker_id in sorted(entries):
        entry = entries[worker_id]
        status, since = worker_status(entry, now_ns)
        rows.append(
            {
                **entry,
                "status": status,
                "secondsSinceHeartbeat": None if since is None else round(since, 3),
                **stats.get(worker_id, empty),
            }
        )
    return rows


def status_counts(workers: list[Document]) -> dict[str, int]:
    return {name: sum(1 for w in workers if w["status"] == name) for name in _STATUSES}


def workers_document(registry_path: str, trajectory_path: str | None, now: datetime) -> Document:
    """The registry as a view at `now`; a trajectory that cannot be read leaves the stats out
    and says why (`statsError`)."""
    entries = read_registry(registry_path)
    try:
        stats, window = step_stats(trajectory_path)
        stats_error = None
    except PremathError as exc:
        stats, window, stats_error = {}, None, exc.message
    workers = worker_rows(entries, stats, epoch_nanos(now))
    return {
        "action": "harness.workers",
        "viewKind": WORKERS_KIND,
        "registryPath": registry_path,
        "trajectoryPath": trajectory_path,
        "now": format_seconds_z(now),
        "silentAfterBeats": SILENT_AFTER_BEATS,
        "window": window,
        "statsError": stats_error,
        "counts": status_counts(workers),
        "workers": workers,
        "attentionReasons": attention_reasons(workers),
    }


_STATUSES = ("running", "silent", "gone")


def status_text(document: Document) -> str:
    """`harness-loop status`: the worker table, then the attention reasons."""
    counts = document["counts"]
    lines = [
        f"[harness-loop status] workers: running={counts['running']} "
        f"silent={counts['silent']} gone={counts['gone']}"
    ]
    header = ("WORKER", "STATUS", "NODE", "PHASE", "ISSUE", "ATTEMPT", "BEAT", "STEPS", "CLOSED")
    table: list[tuple[str, ...]] = [(*header, "PASS")]
    for worker in document["workers"]:
        since = worker.get("secondsSinceHeartbeat")
        attempt = worker.get("attempt")
        table.append(
            (
                worker["workerId"],
                worker["status"] + (f" ({gone})" if (gone := worker.get("goneReason")) else ""),
                worker.get("node") or worker.get("host") or "-",
                worker.get("phase") or "-",
                worker.get("issueId") or "-",
                "-" if attempt is None else f"{attempt}/{worker.get('maxAttempts') or '?'}",
                "-" if since is None else f"{since:.0f}s ago",
                str(worker["steps"]),
                str(worker["closes"]),
                "-" if worker["passRate"] is None else f"{worker['passRate']:.0%}",
            )
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for row in table:
        cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        lines.append(("  " + "  ".join(cells)).rstrip())
    reasons = document["attentionReasons"]
    lines.append("attention: " + ("none" if not reasons else f"{len(reasons)}"))
    lines += [f"  - {reason}" for reason in reasons]
    return "\n".join(lines)
