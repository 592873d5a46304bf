"""The analysis of a run: each variant on its own, then each variant against the baseline.

Errors are kept apart from failures: a variant's pass rate is success / (success + failure),
and its errors are counted by class. Comparisons pair trials on (task, replication) and drop a
pair when either side is an error (specs/experiment.md "Report").
"""

import random
from collections import Counter
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from premath.runner.report.stats import (
    Interval,
    cohens_h,
    fisher_exact_p,
    holm,
    magnitude,
    mcnemar,
    paired_bootstrap,
    unpaired_bootstrap,
)
from premath.runner.runs import RunState, latest_records, open_run
from premath.store.atomic import write_atomic

if TYPE_CHECKING:
    from premath.models.trial import TrialRecord

REPORT_KIND = "premath.experiment.report.v1"
DEFAULT_RESAMPLES = 2000
DEFAULT_CONFIDENCE = 0.95


def _rate(success: int, failure: int) -> float | None:
    judged = success + failure
    return success / judged if judged else None


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _variant_summary(
    variant_id: str, is_baseline: bool, records: list["TrialRecord"]
) -> dict[str, Any]:
    counts = Counter(record.outcome for record in records)
    objectives = [r.objective for r in records if r.objective is not None and r.outcome != "error"]
    names = Counter(objective.name for objective in objectives)
    values = [objective.value for objective in objectives]
    return {
        "variant_id": variant_id,
        "is_baseline": is_baseline,
        "trials": len(records),
        "success": counts["success"],
        "failure": counts["failure"],
        "error": counts["error"],
        "pass_rate": _rate(counts["success"], counts["failure"]),
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


def _success(record: "TrialRecord") -> float:
    return 1.0 if record.outcome == "success" else 0.0


def _paired(
    variant_id: str,
    baseline_id: str,
    treatment: dict[tuple[str, int], "TrialRecord"],
    baseline: dict[tuple[str, int], "TrialRecord"],
    resamples: int,
    confidence: float,
    rng: random.Random,
) -> dict[str, Any]:
    shared = sorted(set(treatment) & set(baseline))
    pairs = [
        (baseline[k], treatment[k])
        for k in shared
        if baseline[k].outcome != "error" and treatment[k].outcome != "error"
    ]
    wins = sum(1 for b, t in pairs if t.outcome == "success" and b.outcome != "success")
    losses = sum(1 for b, t in pairs if b.outcome == "success" and t.outcome != "success")
    test = mcnemar(losses, wins)
    success_diff = paired_bootstrap(
        [_success(t) - _success(b) for b, t in pairs],
        resamples=resamples,
        confidence=confidence,
        rng=rng,
    )
    objective_pairs = [
        (b.objective.value, t.objective.value)
        for b, t in pairs
        if b.objective is not None and t.objective is not None
    ]
    objective_diff = paired_bootstrap(
        [t - b for b, t in objective_pairs], resamples=resamples, confidence=confidence, rng=rng
    )
    rates = (
        (
            sum(_success(t) for _, t in pairs) / len(pairs),
            sum(_success(b) for b, _ in pairs) / len(pairs),
        )
        if pairs
        else None
    )
    h = cohens_h(*rates) if rates else None
    return {
        "variant_id": variant_id,
        "baseline_id": baseline_id,
        "method": "paired",
        "pairs": len(pairs),
        "pairs_dropped": len(shared) - len(pairs),
        "wins": wins,
        "losses": losses,
        "ties": len(pairs) - wins - losses,
        "mcnemar": {
            "b": test.b,
            "c": test.c,
            "statistic": test.statistic,
            "p_value": test.p_value,
            "method": test.method,
        },
        "p_value": test.p_value,
        "p_holm": None,
        "success_diff": _interval(success_diff),
        "objective_diff": _interval(objective_diff),
        "cohens_h": h,
        "magnitude": magnitude(h) if h is not None else None,
    }


def _unpaired(
    variant_id: str,
    baseline_id: str,
    treatment: list["TrialRecord"],
    baseline: list["TrialRecord"],
    resamples: int,
    confidence: float,
    rng: random.Random,
) -> dict[str, Any]:
    t = [r for r in treatment if r.outcome != "error"]
    b = [r for r in baseline if r.outcome != "error"]
    t_success, b_success = sum(map(_success, t)), sum(map(_success, b))
    p_value = fisher_exact_p(
        int(t_success), len(t) - int(t_success), int(b_success), len(b) - int(b_success)
    )
    success_diff = unpaired_bootstrap(
        [_success(r) for r in t],
        [_success(r) for r in b],
        resamples=resamples,
        confidence=confidence,
        rng=rng,
    )
    objective_diff = unpaired_bootstrap(
        [r.objective.value for r in t if r.objective is not None],
        [r.objective.value for r in b if r.objective is not None],
        resamples=resamples,
        confidence=confidence,
        rng=rng,
    )
    h = cohens_h(t_success / len(t), b_success / len(b)) if t and b else None
    return {
        "variant_id": variant_id,
        "baseline_id": baseline_id,
        "method": "unpaired",
        "pairs": None,
        "pairs_dropped": None,
        "wins": None,
        "losses": None,
        "ties": None,
        "mcnemar": None,
        "fisher_p": p_value,
        "p_value": p_value,
        "p_holm": None,
        "success_diff": _interval(success_diff),
        "objective_diff": _interval(objective_diff),
        "cohens_h": h,
        "magnitude": magnitude(h) if h is not None else None,
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
    design = state.spec.design
    bootstrap_seed = design.seed if seed is None else seed
    rng = random.Random(bootstrap_seed)
    comparisons = []
    if design.comparison != "none":
        base_records = by_variant[baseline_id]
        base_keyed = {(r.task_id, r.replication): r for r in base_records}
        for plan in plans[1:]:
            records = by_variant[plan.variant_id]
            if design.comparison == "paired":
                keyed = {(r.task_id, r.replication): r for r in records}
                comparisons.append(
                    _paired(
                        plan.variant_id, baseline_id, keyed, base_keyed, resamples, confidence, rng
                    )
                )
            else:
                comparisons.append(
                    _unpaired(
                        plan.variant_id,
                        baseline_id,
                        records,
                        base_records,
                        resamples,
                        confidence,
                        rng,
                    )
                )
        if len(comparisons) > 1:
            adjusted = holm([c["p_value"] for c in comparisons])
            for comparison, p in zip(comparisons, adjusted, strict=True):
                comparison["p_holm"] = p
    return {
        "report_kind": REPORT_KIND,
        "run_id": state.run_id,
        "experiment_id": state.spec.experiment.id,
        "experiment_name": state.spec.experiment.name,
        "experiment_digest": state.manifest["experiment_digest"],
        "design": {
            "comparison": design.comparison,
            "replications": design.replications,
            "scheduling": design.scheduling,
        },
        "baseline_id": baseline_id,
        "trials": {
            "scheduled": len(state.schedule),
            "final": len(final),
            "pending": len(state.schedule) - len(final),
        },
        "bootstrap": {"resamples": resamples, "confidence": confidence, "seed": bootstrap_seed},
        "variants": [
            _variant_summary(plan.variant_id, plan.is_baseline, by_variant[plan.variant_id])
            for plan in plans
        ],
        "comparisons": comparisons,
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
    """`experiment report`: the report document; with html_path also a self-contained page."""
    from premath.runner.report.render import report_html

    report = build_report(
        open_run(run_ref, runs_dir), resamples=resamples, confidence=confidence, seed=seed
    )
    if html_path is not None:
        write_atomic(html_path, report_html(report).encode("utf-8"))
    return report
