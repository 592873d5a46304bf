"""The analysis of a run: each variant on its own, then each variant against the baseline.

Errors are kept apart from failures: a variant's pass rate is success / (success + failure),
and its errors are counted by class. The unit of analysis is the task: replications of one
task are not independent, so they are averaged into the task's success rate before any test
or interval, and bootstraps resample tasks (specs/experiment.md "Report").
"""

from __future__ import annotations

import os
import random
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from premath.runner.report.stats import (
    Interval,
    cohens_h,
    fisher_exact_p,
    holm,
    magnitude,
    mann_whitney_p,
    paired_bootstrap,
    sign_test,
    unpaired_bootstrap,
    wilson_interval,
)
from premath.runner.runs import RunState, error_messages, latest_records, open_run
from premath.store.atomic import write_atomic

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.models.trial import TrialRecord

REPORT_KIND = "premath.experiment.report.v2"
DEFAULT_RESAMPLES = 2000
DEFAULT_CONFIDENCE = 0.95

_UNIT = (
    "Unit of analysis: the task. Replications of a task are averaged into its success rate "
    "(success / (success + failure); errors are left out), so a deterministic harness run R "
    "times counts once per task, not R times. Pass-rate intervals are Wilson intervals over "
    "tasks."
)
METHODS = {
    "paired": _UNIT
    + " Paired on tasks judged on both sides: the sign test on per-task differences (exact "
    "binomial below 25 discordant tasks, else chi-square with continuity correction), which is "
    "McNemar's test when every rate is 0 or 1; a percentile bootstrap CI resampling tasks. "
    "Holm's step-down adjustment covers the comparisons that have data.",
    "unpaired": _UNIT
    + " Unpaired: Fisher's exact test when every task has one judged trial per side, else "
    "Mann-Whitney U on per-task rates; a percentile bootstrap CI resampling each side's tasks. "
    "Holm's step-down adjustment covers the comparisons that have data.",
    "none": _UNIT + " No comparison between variants (design.comparison: none).",
}
"""The method as the report states it, per design.comparison."""


@dataclass(frozen=True, slots=True)
class TaskTally:
    """One variant's judged trials of one task."""

    success: int
    failure: int
    error: int
    objective: list[float]

    @property
    def rate(self) -> float | None:
        judged = self.success + self.failure
        return self.success / judged if judged else None

    @property
    def objective_mean(self) -> float | None:
        return sum(self.objective) / len(self.objective) if self.objective else None


def _tally(records: list[TrialRecord]) -> TaskTally:
    counts = Counter(record.outcome for record in records)
    return TaskTally(
        counts["success"],
        counts["failure"],
        counts["error"],
        [r.objective.value for r in records if r.objective is not None and r.outcome != "error"],
    )


def _rate(success: int, failure: int) -> float | None:
    judged = success + failure
    return success / judged if judged else None


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _variant_summary(
    variant_id: str,
    is_baseline: bool,
    records: list[TrialRecord],
    tallies: dict[str, TaskTally],
    confidence: float,
) -> dict[str, Any]:
    counts = Counter(record.outcome for record in records)
    objectives = [r.objective for r in records if r.objective is not None and r.outcome != "error"]
    names = Counter(objective.name for objective in objectives)
    values = [objective.value for objective in objectives]
    rates = [rate for tally in tallies.values() if (rate := tally.rate) is not None]
    interval = wilson_interval(sum(rates), len(rates), confidence)
    return {
        "variant_id": variant_id,
        "is_baseline": is_baseline,
        "trials": len(records),
        "success": counts["success"],
        "failure": counts["failure"],
        "error": counts["error"],
        "pass_rate": _rate(counts["success"], counts["failure"]),
        "tasks": len(rates),
        "task_pass_rate": _mean(rates),
        "task_pass_rate_ci": None
        if interval is None
        else {"low": interval[0], "high": interval[1], "confidence": confidence},
        "objective": None
        if not values
        else {"name": names.most_common(1)[0][0], "mean": _mean(values), "n": len(values)},
        "errors_by_class": dict(
            sorted(Counter(r.error_class for r in records if r.error_class).items())
        ),
    }


def _interval(interval: Interval | None) -> dict[str, float] | None:
    if interval is None:
        return None
    document = asdict(interval)
    document.pop("resamples")
    return document


def _verdict(treatment: float | None, baseline: float | None) -> str | None:
    """The task's outcome against the baseline: win, loss or tie; None if a side has no rate."""
    if treatment is None or baseline is None:
        return None
    if treatment > baseline:
        return "win"
    return "loss" if treatment < baseline else "tie"


def _paired(
    variant_id: str,
    baseline_id: str,
    treatment: dict[str, TaskTally],
    baseline: dict[str, TaskTally],
    resamples: int,
    confidence: float,
    rng: random.Random,
) -> dict[str, Any]:
    shared = sorted(set(treatment) & set(baseline))
    pairs = [
        (baseline[task], treatment[task])
        for task in shared
        if baseline[task].rate is not None and treatment[task].rate is not None
    ]
    rates = [(b.rate or 0.0, t.rate or 0.0) for b, t in pairs]
    verdicts = Counter(_verdict(t, b) for b, t in rates)
    differences = [t - b for b, t in rates]
    test = sign_test(differences)
    success_diff = paired_bootstrap(
        differences, resamples=resamples, confidence=confidence, rng=rng
    )
    objective_pairs = [
        (b_mean, t_mean)
        for b, t in pairs
        if (b_mean := b.objective_mean) is not None and (t_mean := t.objective_mean) is not None
    ]
    objective_diff = paired_bootstrap(
        [t - b for b, t in objective_pairs], resamples=resamples, confidence=confidence, rng=rng
    )
    h = (
        cohens_h(sum(t for _, t in rates) / len(rates), sum(b for b, _ in rates) / len(rates))
        if rates
        else None
    )
    return {
        "variant_id": variant_id,
        "baseline_id": baseline_id,
        "method": "paired",
        "tasks": len(pairs),
        "tasks_dropped": len(set(treatment) | set(baseline)) - len(pairs),
        "trials": sum(side.success + side.failure for pair in pairs for side in pair),
        "wins": verdicts["win"],
        "losses": verdicts["loss"],
        "ties": verdicts["tie"],
        "test": None
        if test is None
        else {
            "name": "sign",
            "method": test.method,
            "b": test.b,
            "c": test.c,
            "statistic": test.statistic,
        },
        "p_value": None if test is None else test.p_value,
        "p_holm": None,
        "success_diff": _interval(success_diff),
        "objective_diff": _interval(objective_diff),
        "cohens_h": h,
        "magnitude": magnitude(h) if h is not None else None,
    }


def _unpaired(
    variant_id: str,
    baseline_id: str,
    treatment: dict[str, TaskTally],
    baseline: dict[str, TaskTally],
    resamples: int,
    confidence: float,
    rng: random.Random,
) -> dict[str, Any]:
    t = [tally for tally in treatment.values() if tally.rate is not None]
    b = [tally for tally in baseline.values() if tally.rate is not None]
    t_rates = [tally.rate or 0.0 for tally in t]
    b_rates = [tally.rate or 0.0 for tally in b]
    test: dict[str, Any] | None = None
    p_value: float | None = None
    if t and b:
        if all(tally.success + tally.failure == 1 for tally in t + b):
            t_success, b_success = sum(x.success for x in t), sum(x.success for x in b)
            p_value = fisher_exact_p(t_success, len(t) - t_success, b_success, len(b) - b_success)
            test = {"name": "fisher", "method": "exact"}
        else:
            p_value = mann_whitney_p(t_rates, b_rates)
            test = {"name": "mann_whitney", "method": "normal_cc"}
    success_diff = unpaired_bootstrap(
        t_rates, b_rates, resamples=resamples, confidence=confidence, rng=rng
    )
    objective_diff = unpaired_bootstrap(
        [mean for x in t if (mean := x.objective_mean) is not None],
        [mean for x in b if (mean := x.objective_mean) is not None],
        resamples=resamples,
        confidence=confidence,
        rng=rng,
    )
    h = cohens_h(sum(t_rates) / len(t), sum(b_rates) / len(b)) if t and b else None
    return {
        "variant_id": variant_id,
        "baseline_id": baseline_id,
        "method": "unpaired",
        "tasks": None,
        "tasks_dropped": None,
        "trials": sum(x.success + x.failure for x in t + b),
        "wins": None,
        "losses": None,
        "ties": None,
        "test": test,
        "p_value": p_value,
        "p_holm": None,
        "success_diff": _interval(success_diff),
        "objective_diff": _interval(objective_diff),
        "cohens_h": h,
        "magnitude": magnitude(h) if h is not None else None,
    }


def _grid(
    state: RunState,
    by_variant: dict[str, list[TrialRecord]],
    tallies: dict[str, dict[str, TaskTally]],
    baseline_id: str,
) -> list[dict[str, Any]]:
    """One row per task in dataset order; one cell per variant with its trials."""
    records: dict[tuple[str, str], list[TrialRecord]] = {}
    for variant_id, variant_records in by_variant.items():
        for record in variant_records:
            records.setdefault((record.task_id, variant_id), []).append(record)
    rows = []
    for task in state.tasks:
        base = tallies[baseline_id].get(task.id)
        cells = []
        for variant_id in by_variant:
            tally = tallies[variant_id].get(task.id)
            trials = sorted(records.get((task.id, variant_id), []), key=lambda r: r.replication)
            cells.append(
                {
                    "variant_id": variant_id,
                    "success": tally.success if tally else 0,
                    "failure": tally.failure if tally else 0,
                    "error": tally.error if tally else 0,
                    "rate": tally.rate if tally else None,
                    "versus_baseline": None
                    if variant_id == baseline_id
                    else _verdict(tally.rate if tally else None, base.rate if base else None),
                    "trials": [
                        {
                            "trial_id": r.trial_id,
                            "replication": r.replication,
                            "outcome": r.outcome,
                            "error_class": r.error_class,
                        }
                        for r in trials
                    ],
                }
            )
        rows.append({"task_id": task.id, "cells": cells})
    return rows


def _metadata(state: RunState, final: list[TrialRecord]) -> dict[str, Any]:
    """When the run was made, started and finished; an unfinished run (interrupted, trials
    pending) has no finish time, whatever its last trial's."""
    design = state.spec.design
    finished = len(final) == len(state.schedule)
    return {
        "commit": state.manifest.get("commit"),
        "seed": design.seed,
        "scheduling": design.scheduling,
        "executor": state.executor_name,
        "created_at": state.manifest["created_at"],
        "started_at": min((r.started_at for r in final), default=None),
        "finished_at": max((r.finished_at for r in final), default=None) if finished else None,
    }


def build_report(
    state: RunState,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int | None = None,
) -> dict[str, Any]:
    """The report document; the same run, resamples and seed always give the same bytes."""
    latest = latest_records(state.paths)
    final = [
        record
        for slot in state.schedule
        if (record := latest.get(slot.key)) is not None and record.final
    ]
    plans = list(state.plans.values())
    baseline_id = plans[0].variant_id
    by_variant: dict[str, list[TrialRecord]] = {plan.variant_id: [] for plan in plans}
    for record in final:
        by_variant[record.variant_id].append(record)
    tallies: dict[str, dict[str, TaskTally]] = {}
    for variant_id, records in by_variant.items():
        per_task: dict[str, list[TrialRecord]] = {}
        for record in records:
            per_task.setdefault(record.task_id, []).append(record)
        tallies[variant_id] = {task: _tally(group) for task, group in per_task.items()}
    design = state.spec.design
    bootstrap_seed = design.seed if seed is None else seed
    rng = random.Random(bootstrap_seed)
    comparisons = []
    if design.comparison != "none":
        compare = _paired if design.comparison == "paired" else _unpaired
        comparisons = [
            compare(
                plan.variant_id,
                baseline_id,
                tallies[plan.variant_id],
                tallies[baseline_id],
                resamples,
                confidence,
                rng,
            )
            for plan in plans[1:]
        ]
        with_data = [c for c in comparisons if c["p_value"] is not None]
        if len(with_data) > 1:
            adjusted = holm([c["p_value"] for c in with_data])
            for comparison, p in zip(with_data, adjusted, strict=True):
                comparison["p_holm"] = p
    return {
        "report_kind": REPORT_KIND,
        "run_id": state.run_id,
        "run_dir": os.fspath(state.paths.root),
        "experiment_id": state.spec.experiment.id,
        "experiment_name": state.spec.experiment.name,
        "experiment_digest": state.manifest["experiment_digest"],
        "metadata": _metadata(state, final),
        "design": {
            "comparison": design.comparison,
            "replications": design.replications,
            "scheduling": design.scheduling,
        },
        "baseline_id": baseline_id,
        "method": METHODS[design.comparison],
        "tasks": len(state.tasks),
        "trials": {
            "scheduled": len(state.schedule),
            "final": len(final),
            "pending": len(state.schedule) - len(final),
        },
        "bootstrap": {"resamples": resamples, "confidence": confidence, "seed": bootstrap_seed},
        "variants": [
            _variant_summary(
                plan.variant_id,
                plan.is_baseline,
                by_variant[plan.variant_id],
                tallies[plan.variant_id],
                confidence,
            )
            for plan in plans
        ],
        "comparisons": comparisons,
        "grid": _grid(state, by_variant, tallies, baseline_id),
        "error_messages": error_messages(final),
    }


def report_run(
    run_ref: str,
    *,
    runs_dir: str,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int | None = None,
    html_path: str | None = None,
) -> dict[str, Any]:
    """`experiment report`: the report document; with html_path also a self-contained page,
    whose links to trial folders are relative to the page's own folder."""
    from premath.runner.report.render import report_html

    report = build_report(
        open_run(run_ref, runs_dir), resamples=resamples, confidence=confidence, seed=seed
    )
    if html_path is not None:
        page_dir = Path(html_path).absolute().parent
        write_atomic(html_path, report_html(report, page_dir=page_dir).encode("utf-8"))
        report["html_path"] = html_path  # said in the text too: where the page went
    return report
