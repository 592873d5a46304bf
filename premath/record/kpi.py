"""The multithread throughput KPI (`premath.multithread.throughput.v1`) over the trajectory.

kpi = completed issues per day per active worker, times the gate pass rate, over a window
ending at the latest row; specs/kpi.md "Formula" gives the formula.
Divergences: D5-4 (a worker is named by the step id minus `.<issueId>.<n>`, not its first
dotted piece), D5-5 (relative paths resolve against the working folder; errors exit 2), D24-5
(host-effect records, rows of action `scheme_eval.*`, are calls inside a step, not steps: the
step's own row counts them once), D25-2 (a row is failed exactly when `harness-trajectory query
--mode failed` lists it; a row without an issue id that did not fail is no gate outcome and is
left out).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import orjson

from premath.errors import ArtifactInvalid, InvalidUsage, IoFailure
from premath.models.kpi import (
    DEFAULT_MIN_SAMPLE_ROWS,
    DEFAULT_ROLLBACK_KPI,
    DEFAULT_TARGET_KPI,
    DEFAULT_WINDOW_HOURS,
    KPI_KIND,
    KPI_SCHEMA,
)
from premath.models.trajectory import is_failed
from premath.models.vocabulary import DEFAULT_ISSUES_PATH
from premath.store.documents import os_error_text
from premath.store.jsonl import iter_lines, report_torn_tail
from premath.timefmt import parse_strict_rfc3339

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
HOST_EFFECT_ACTIONS = ("scheme_eval.", "rhai_eval.")
"""Row actions of host-effect records (one per host call of a program, agent-surface.md §3.8)."""


class KpiInputInvalid(ArtifactInvalid):
    """A trajectory row the KPI cannot use; exit 2, as the reference meant (its bug B1)."""

    exit_code = 2


@dataclass(frozen=True, slots=True)
class KpiRow:
    step_id: str
    issue_id: str
    result_class: str
    finished_at: datetime


def worker_id_of(step_id: str, issue_id: str) -> str:
    """The worker of `<worker>.<issue>.<n>`; worker ids may hold dots (D5-4, fixes B2)."""
    cleaned = step_id.strip()
    if issue_id:
        head, dot, index = cleaned.rpartition(".")
        suffix = f".{issue_id}"
        if dot and index.isdigit() and head.endswith(suffix) and len(head) > len(suffix):
            return head[: -len(suffix)]
    return cleaned.split(".", 1)[0] or "unknown"


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    return value.strip() if isinstance(value, str) else str(value).strip()


def _instant(text: str, where: str) -> datetime:
    parsed = parse_strict_rfc3339(text)
    if parsed is None:
        raise KpiInputInvalid(f"{where}:finishedAt must be RFC3339: {text!r}")
    seconds, nanos = parsed
    return EPOCH + timedelta(seconds=seconds, microseconds=nanos // 1000)


def load_kpi_rows(path: str) -> list[KpiRow]:
    """Every row of the trajectory (none when the file is missing), latest first."""
    if not os.path.exists(path):
        return []
    if not os.path.isfile(path):
        raise KpiInputInvalid(f"trajectory path is not a file: {path}")
    rows: list[KpiRow] = []
    try:
        for line in iter_lines(path):
            where = f"{path}:{line.number}"
            try:
                payload = orjson.loads(line.text)
            except orjson.JSONDecodeError as exc:
                if not line.terminated:
                    report_torn_tail(path, line)
                    continue
                raise KpiInputInvalid(f"invalid JSON in {where}: {exc}") from exc
            if not isinstance(payload, dict):
                raise KpiInputInvalid(f"trajectory row must be object ({where})")
            step_id, action, result_class, finished = (
                _as_text(payload.get(key))
                for key in ("stepId", "action", "resultClass", "finishedAt")
            )
            if not (step_id and action and result_class and finished):
                raise KpiInputInvalid(
                    "trajectory row missing required fields "
                    f"(stepId/action/resultClass/finishedAt) at {where}"
                )
            if action.startswith(HOST_EFFECT_ACTIONS):
                continue
            rows.append(
                KpiRow(
                    step_id,
                    _as_text(payload.get("issueId")),
                    result_class,
                    _instant(finished, where),
                )
            )
    except OSError as exc:
        raise IoFailure(f"failed to read trajectory {path}: {os_error_text(exc)}") from exc
    rows.sort(key=lambda row: row.finished_at, reverse=True)
    return rows


def _iso_z(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _validate(
    window_hours: int, target_kpi: float, rollback_kpi: float, min_sample_rows: int
) -> None:
    if window_hours <= 0:
        raise InvalidUsage("--window-hours must be > 0")
    if min_sample_rows < 1:
        raise InvalidUsage("--min-sample-rows must be >= 1")
    if target_kpi <= 0:
        raise InvalidUsage("--target-kpi must be > 0")
    if rollback_kpi <= 0:
        raise InvalidUsage("--rollback-kpi must be > 0")
    if target_kpi <= rollback_kpi:
        raise InvalidUsage("--target-kpi must be greater than --rollback-kpi")


def _decision(
    row_count: int, kpi: float, target: float, rollback: float, min_rows: int
) -> dict[str, str]:
    if row_count < min_rows:
        return {
            "state": "insufficient_data",
            "reason": "window row count below minimum sample threshold",
        }
    if kpi < rollback:
        return {"state": "rollback", "reason": "kpi below rollback threshold"}
    if kpi < target:
        return {"state": "watch", "reason": "kpi below target threshold"}
    return {"state": "pass", "reason": "kpi at or above target threshold"}


def kpi_report(
    *,
    trajectory_path: str = ".premath/harness_trajectory.jsonl",
    session_path: str = ".premath/harness_session.json",
    issues_path: str = DEFAULT_ISSUES_PATH,
    window_hours: int = DEFAULT_WINDOW_HOURS,
    target_kpi: float = DEFAULT_TARGET_KPI,
    rollback_kpi: float = DEFAULT_ROLLBACK_KPI,
    min_sample_rows: int = DEFAULT_MIN_SAMPLE_ROWS,
    now: datetime | None = None,
) -> dict[str, Any]:
    """The KPI document; the session and issues paths are only echoed, as in the reference.

    Without rows the window ends at `now` (to the second; the reference's 1970-01-01 only when
    no `now` is given): an empty window is the last `windowHours`, not 1969 (D30a-3)."""
    _validate(window_hours, target_kpi, rollback_kpi, min_sample_rows)
    trajectory, session, issues = (
        os.path.abspath(p) for p in (trajectory_path, session_path, issues_path)
    )
    rows = load_kpi_rows(trajectory)
    empty_end = EPOCH if now is None else now.astimezone(UTC).replace(microsecond=0)
    window_end = rows[0].finished_at if rows else empty_end
    window_start = window_end - timedelta(hours=window_hours)
    # The gate's outcomes (D25-2): every failed row, as the trajectory query counts them, and
    # the issue steps that passed; a passing row without an issue (a check an agent appended)
    # completed no issue, so it counts on neither side.
    window_rows = [
        row
        for row in rows
        if window_start <= row.finished_at <= window_end
        and (row.issue_id or is_failed(row.result_class))
    ]
    completed = sum(1 for row in window_rows if row.issue_id and not is_failed(row.result_class))
    worker_ids = sorted({worker_id_of(r.step_id, r.issue_id) for r in window_rows if r.issue_id})
    pass_rate = completed / len(window_rows) if window_rows else 0.0
    throughput = completed * (24.0 / float(window_hours)) / float(max(len(worker_ids), 1))
    kpi = throughput * pass_rate
    return {
        "schema": KPI_SCHEMA,
        "kpiKind": KPI_KIND,
        "windowHours": window_hours,
        "windowStart": _iso_z(window_start),
        "windowEnd": _iso_z(window_end),
        "counts": {
            "windowRows": len(window_rows),
            "completedRows": completed,
            "failedRows": len(window_rows) - completed,
            "activeWorkers": len(worker_ids),
            "workerIds": worker_ids,
        },
        "ratios": {
            "gatePassRate": round(pass_rate, 6),
            "throughputPerWorkerPerDay": round(throughput, 6),
            "kpi": round(kpi, 6),
        },
        "thresholds": {
            "targetKpi": round(float(target_kpi), 6),
            "rollbackKpi": round(float(rollback_kpi), 6),
            "minSampleRows": min_sample_rows,
        },
        "decision": _decision(len(window_rows), kpi, target_kpi, rollback_kpi, min_sample_rows),
        "refs": {"trajectoryPath": trajectory, "sessionPath": session, "issuesPath": issues},
    }


def kpi_text(report: dict[str, Any]) -> str:
    """The reference's six text lines."""
    counts, ratios = report["counts"], report["ratios"]
    thresholds, decision = report["thresholds"], report["decision"]
    return "\n".join(
        (
            "[harness-kpi] deterministic throughput benchmark",
            f"  window: {report['windowStart']} -> {report['windowEnd']} "
            f"({report['windowHours']}h)",
            f"  counts: rows={counts['windowRows']} completed={counts['completedRows']} "
            f"failed={counts['failedRows']} workers={counts['activeWorkers']}",
            f"  ratios: pass_rate={ratios['gatePassRate']} "
            f"throughput_per_worker_day={ratios['throughputPerWorkerPerDay']} kpi={ratios['kpi']}",
            f"  thresholds: target={thresholds['targetKpi']} rollback={thresholds['rollbackKpi']} "
            f"min_rows={thresholds['minSampleRows']}",
            f"  decision: {decision['state']} ({decision['reason']})",
        )
    )
