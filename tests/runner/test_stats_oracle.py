"""The report's statistics against scipy and statsmodels, on random data.

The runtime keeps its own small implementation (no numpy on the start-up path); these oracles
are test-only dependencies. Exact tests and closed forms must agree to 1e-9. The bootstrap is
Monte Carlo on both sides (different random streams), so it agrees within a stated tolerance:
0.4 standard errors of the mean plus one step of the resampled means' lattice (the smallest gap
between distinct values, divided by n). At 4000 resamples the 2.5% and 97.5% percentiles each
carry about 0.045 standard errors of Monte Carlo noise, so the tolerance is about six of those
noise units; the lattice term covers the two percentile definitions (an order statistic here,
interpolation in scipy) landing on neighbouring points of a discrete bootstrap distribution.
"""

import itertools
import math
import random
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from premath.runner.report.stats import (
    Interval,
    cohens_h,
    fisher_exact_p,
    holm,
    mann_whitney_p,
    mcnemar,
    mcnemar_chi2_cc,
    mcnemar_exact_p,
    paired_bootstrap,
    sign_test,
    unpaired_bootstrap,
    wilson_interval,
)

scipy_stats = pytest.importorskip("scipy.stats", reason="scipy is in the test extra")
contingency = pytest.importorskip(
    "statsmodels.stats.contingency_tables", reason="statsmodels is in the test extra"
)
from statsmodels.stats.multitest import multipletests  # noqa: E402
from statsmodels.stats.proportion import proportion_confint, proportion_effectsize  # noqa: E402

EXACT = 1e-9
RESAMPLES = 4000

counts = st.integers(min_value=0, max_value=80)
# Per-task success rates with 1 to 4 replications: the values the report actually sees.
task_rates = st.integers(min_value=1, max_value=4).flatmap(
    lambda r: st.integers(min_value=0, max_value=r).map(lambda k: k / r)
)
differences = st.one_of(
    st.lists(st.tuples(task_rates, task_rates).map(lambda p: p[0] - p[1]), min_size=1),
    st.lists(st.floats(min_value=-1, max_value=1, allow_nan=False), min_size=1, max_size=60),
)


@given(counts, counts)
def test_mcnemar_exact_matches_statsmodels_and_the_binomial_test(b, c):
    if b + c == 0:
        return
    table = [[0, b], [c, 0]]
    expected = contingency.mcnemar(table, exact=True).pvalue
    assert mcnemar_exact_p(b, c) == pytest.approx(expected, abs=EXACT)
    binomial = scipy_stats.binomtest(c, b + c, 0.5).pvalue
    assert mcnemar_exact_p(b, c) == pytest.approx(binomial, abs=EXACT)


@given(counts, counts)
def test_mcnemar_chi2_matches_statsmodels(b, c):
    if b == c:  # statsmodels does not clip |b - c| - 1 at 0; ours does, so p = 1 (documented)
        assert mcnemar_chi2_cc(b, c)[1] == 1.0
        return
    result = contingency.mcnemar([[0, b], [c, 0]], exact=False, correction=True)
    chi2, p = mcnemar_chi2_cc(b, c)
    assert chi2 == pytest.approx(result.statistic, abs=EXACT)
    assert p == pytest.approx(result.pvalue, abs=EXACT)


@given(differences)
def test_the_sign_test_on_task_differences_is_the_binomial_test(values):
    test = sign_test(values)
    assert test is not None
    below = sum(1 for d in values if d < 0)
    above = sum(1 for d in values if d > 0)
    assert (test.b, test.c) == (below, above)
    if below + above == 0:
        assert test.p_value == 1.0
    elif test.method == "exact":
        expected = scipy_stats.binomtest(above, below + above, 0.5).pvalue
        assert test.p_value == pytest.approx(expected, abs=EXACT)
    else:
        assert below + above >= 25
        assert test.p_value == pytest.approx(mcnemar(below, above).p_value, abs=EXACT)
    assert sign_test([]) is None


@given(counts, counts, counts, counts)
def test_fisher_exact_matches_scipy(a, b, c, d):
    expected = scipy_stats.fisher_exact([[a, b], [c, d]]).pvalue
    if math.isnan(expected):  # scipy: an empty row or column has no test; ours says p = 1
        assert fisher_exact_p(a, b, c, d) == 1.0
        return
    assert fisher_exact_p(a, b, c, d) == pytest.approx(expected, abs=EXACT)


@given(st.floats(0, 1), st.floats(0, 1))
def test_cohens_h_matches_statsmodels(p1, p0):
    assert cohens_h(p1, p0) == pytest.approx(proportion_effectsize(p1, p0), abs=EXACT)


@settings(max_examples=30)  # multipletests costs ~0.1 s a call
@given(st.lists(st.floats(min_value=0, max_value=1), min_size=1, max_size=12))
def test_holm_matches_statsmodels(p_values):
    expected = multipletests(p_values, method="holm")[1]
    assert holm(p_values) == pytest.approx(list(expected), abs=EXACT)


@given(
    st.integers(min_value=1, max_value=500).flatmap(
        lambda n: st.tuples(st.floats(min_value=0, max_value=n), st.just(n))
    ),
    st.sampled_from([0.8, 0.9, 0.95, 0.99]),
)
def test_wilson_interval_matches_statsmodels(count_and_n, confidence):
    successes, n = count_and_n  # fractional: a sum of per-task rates
    low, high = proportion_confint(successes, n, alpha=1 - confidence, method="wilson")
    interval = wilson_interval(successes, n, confidence)
    assert interval is not None
    assert interval[0] == pytest.approx(max(0.0, low), abs=EXACT)
    assert interval[1] == pytest.approx(min(1.0, high), abs=EXACT)
    assert wilson_interval(0, 0, confidence) is None


@given(
    st.lists(task_rates, min_size=1, max_size=40),
    st.lists(task_rates, min_size=1, max_size=40),
)
def test_mann_whitney_matches_scipy(x, y):
    ours = mann_whitney_p(x, y)
    if len(set(x + y)) == 1:  # every value tied: scipy answers nan, ours p = 1
        assert ours == 1.0
        return
    expected = scipy_stats.mannwhitneyu(
        x, y, alternative="two-sided", method="asymptotic", use_continuity=True
    ).pvalue
    assert ours == pytest.approx(expected, abs=EXACT)


def _tolerance(*samples: list[float]) -> float:
    """0.4 standard errors of the statistic plus one lattice step (see the module docstring)."""
    se = math.sqrt(sum(float(np.var(s)) / len(s) for s in samples))
    lattice = 0.0
    for sample in samples:
        distinct = sorted(set(sample))
        if len(distinct) > 1:
            lattice += min(b - a for a, b in itertools.pairwise(distinct)) / len(sample)
    return 0.4 * se + lattice + EXACT


def _assert_close_to_scipy(
    ours: Interval, samples: tuple[list[float], ...], statistic: Any, seed: int
) -> None:
    """Our percentile interval is within the stated tolerance of scipy's on the same data."""
    theirs = scipy_stats.bootstrap(
        tuple(np.array(sample) for sample in samples),
        statistic,
        method="percentile",
        n_resamples=RESAMPLES,
        confidence_level=0.95,
        rng=np.random.default_rng(seed),
    ).confidence_interval
    tolerance = _tolerance(*samples)
    assert abs(ours.low - theirs.low) <= tolerance
    assert abs(ours.high - theirs.high) <= tolerance


@settings(max_examples=60, derandomize=True, deadline=None)
@given(differences.filter(lambda d: len(d) >= 8), st.integers(0, 2**32 - 1))
def test_paired_bootstrap_matches_scipy_within_tolerance(values, seed):
    ours = paired_bootstrap(values, resamples=RESAMPLES, confidence=0.95, rng=random.Random(seed))
    assert ours is not None
    assert ours.estimate == pytest.approx(sum(values) / len(values), abs=EXACT)
    _assert_close_to_scipy(ours, (values,), lambda d, axis: d.mean(axis=axis), seed)
    again = paired_bootstrap(values, resamples=RESAMPLES, confidence=0.95, rng=random.Random(seed))
    assert again == ours  # a fixed seed gives the same interval


@settings(max_examples=40, derandomize=True, deadline=None)
@given(
    st.lists(task_rates, min_size=8, max_size=40),
    st.lists(task_rates, min_size=8, max_size=40),
    st.integers(0, 2**32 - 1),
)
def test_unpaired_bootstrap_matches_scipy_within_tolerance(treatment, baseline, seed):
    ours = unpaired_bootstrap(
        treatment, baseline, resamples=RESAMPLES, confidence=0.95, rng=random.Random(seed)
    )
    assert ours is not None
    _assert_close_to_scipy(
        ours, (treatment, baseline), lambda t, b, axis: t.mean(axis=axis) - b.mean(axis=axis), seed
    )
