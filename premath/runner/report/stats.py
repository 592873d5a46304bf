"""Statistics for comparing variants, with the standard library only (math, a seeded Random).

Formulas are spelled out in specs/experiment.md "Report"; tests check them against values
computed by hand and, on random data, against scipy and statsmodels (test-only dependencies:
the runtime stays small and starts fast).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist
from typing import Literal

EXACT_BELOW = 25
"""McNemar uses the exact binomial test when b + c is below this, else chi-square with
continuity correction (the usual rule of thumb)."""

Magnitude = Literal["negligible", "small", "medium", "large"]


@dataclass(frozen=True, slots=True)
class McNemar:
    """McNemar's test, which is the sign test on discordant pairs."""

    b: int
    """Pairs (tasks) where the baseline did better."""
    c: int
    """Pairs (tasks) where the treatment did better."""
    statistic: float | None
    """The continuity-corrected chi-square (None for the exact test)."""
    p_value: float
    method: Literal["exact", "chi2_cc"]


def mcnemar_exact_p(b: int, c: int) -> float:
    """Two-sided exact binomial p: 2 * P(X <= min(b, c)), X ~ Bin(b + c, 1/2), capped at 1."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    return min(1.0, float(Fraction(2 * tail, 2**n)))  # exact for any n, no float overflow


def mcnemar_chi2_cc(b: int, c: int) -> tuple[float, float]:
    """(chi2, p) with Edwards' continuity correction: (|b - c| - 1)^2 / (b + c), 1 df."""
    n = b + c
    if n == 0:
        return 0.0, 1.0
    chi2 = max(abs(b - c) - 1, 0) ** 2 / n
    return chi2, math.erfc(math.sqrt(chi2 / 2))


def mcnemar(b: int, c: int) -> McNemar:
    """Exact below EXACT_BELOW discordant pairs, else chi-square with continuity correction."""
    if b + c < EXACT_BELOW:
        return McNemar(b, c, None, mcnemar_exact_p(b, c), "exact")
    chi2, p = mcnemar_chi2_cc(b, c)
    return McNemar(b, c, chi2, p, "chi2_cc")


def sign_test(differences: Sequence[float]) -> McNemar | None:
    """The sign test on per-task differences (treatment - baseline): b tasks where the baseline
    did better, c where the treatment did, ties dropped; None without a single pair. With 0/1
    per-task outcomes this is McNemar's test on tasks."""
    if not differences:
        return None
    return mcnemar(sum(1 for d in differences if d < 0), sum(1 for d in differences if d > 0))


def fisher_exact_p(a: int, b: int, c: int, d: int) -> float:
    """Two-sided Fisher exact p of the 2x2 table [[a, b], [c, d]] (success/failure by group):
    the sum of the probabilities of all tables with the same margins that are no more likely."""
    row1, col1, n = a + b, a + c, a + b + c + d
    if n == 0:
        return 1.0
    denominator = math.comb(n, col1)

    def probability(x: int) -> float:
        return math.comb(row1, x) * math.comb(n - row1, col1 - x) / denominator

    observed = probability(a)
    low, high = max(0, col1 - (n - row1)), min(row1, col1)
    total = sum(p for x in range(low, high + 1) if (p := probability(x)) <= observed * (1 + 1e-7))
    return min(1.0, total)


def cohens_h(p_treatment: float, p_baseline: float) -> float:
    """2 asin sqrt(p1) - 2 asin sqrt(p0)."""
    return 2 * math.asin(math.sqrt(p_treatment)) - 2 * math.asin(math.sqrt(p_baseline))


def magnitude(h: float) -> Magnitude:
    """Cohen's thresholds on |h|: 0.2 small, 0.5 medium, 0.8 large."""
    size = abs(h)
    if size < 0.2:
        return "negligible"
    if size < 0.5:
        return "small"
    if size < 0.8:
        return "medium"
    return "large"


def mann_whitney_p(x: Sequence[float], y: Sequence[float]) -> float:
    """Two-sided Mann-Whitney U p: normal approximation with tie and continuity corrections.

    z = (|U - n1 n2 / 2| - 1/2) / sigma, sigma^2 = n1 n2 / 12 * ((n + 1) - sum(t^3 - t) /
    (n (n - 1))) over tie groups of size t; p = erfc(z / sqrt 2), capped at 1 (1 when every
    value is tied, so sigma is 0).
    """
    n1, n2 = len(x), len(y)
    n = n1 + n2
    if n1 == 0 or n2 == 0:
        return 1.0
    pooled = sorted([(value, 0) for value in x] + [(value, 1) for value in y])
    rank_sum_x = 0.0
    ties = 0.0
    start = 0
    while start < n:
        end = start
        while end + 1 < n and pooled[end + 1][0] == pooled[start][0]:
            end += 1
        size = end - start + 1
        mid_rank = (start + end) / 2 + 1
        rank_sum_x += mid_rank * sum(1 for i in range(start, end + 1) if pooled[i][1] == 0)
        ties += size**3 - size
        start = end + 1
    u = rank_sum_x - n1 * (n1 + 1) / 2
    variance = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)))
    if variance <= 0:
        return 1.0
    z = (abs(u - n1 * n2 / 2) - 0.5) / math.sqrt(variance)
    return min(1.0, math.erfc(z / math.sqrt(2)))


def wilson_interval(successes: float, n: int, confidence: float) -> tuple[float, float] | None:
    """Wilson score interval of a proportion; `successes` may be fractional (a sum of rates).

    centre = (p + z^2 / 2n) / (1 + z^2 / n), half = z / (1 + z^2 / n) * sqrt(p (1 - p) / n
    + z^2 / 4n^2), z the normal quantile of 1 - (1 - confidence) / 2.
    """
    if n == 0:
        return None
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values, in the input's order."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


@dataclass(frozen=True, slots=True)
class Interval:
    estimate: float
    low: float
    high: float
    confidence: float
    resamples: int


def _percentiles(means: list[float], confidence: float) -> tuple[float, float]:
    """Percentile interval: sorted[floor(a/2 * B)] and sorted[ceil((1 - a/2) * B) - 1]."""
    means.sort()
    count = len(means)
    alpha = 1 - confidence
    low = means[min(count - 1, math.floor(alpha / 2 * count))]
    high = means[max(0, math.ceil((1 - alpha / 2) * count) - 1)]
    return low, high


def paired_bootstrap(
    differences: Sequence[float], *, resamples: int, confidence: float, rng: random.Random
) -> Interval | None:
    """Mean of per-pair differences and its percentile CI, resampling pairs with replacement."""
    n = len(differences)
    if n == 0:
        return None
    values = list(differences)
    means = [sum(rng.choices(values, k=n)) / n for _ in range(resamples)]
    low, high = _percentiles(means, confidence)
    return Interval(sum(values) / n, low, high, confidence, resamples)


def unpaired_bootstrap(
    treatment: Sequence[float],
    baseline: Sequence[float],
    *,
    resamples: int,
    confidence: float,
    rng: random.Random,
) -> Interval | None:
    """Difference of means (treatment - baseline), each group resampled on its own."""
    if not treatment or not baseline:
        return None
    t, b = list(treatment), list(baseline)
    means = [
        sum(rng.choices(t, k=len(t))) / len(t) - sum(rng.choices(b, k=len(b))) / len(b)
        for _ in range(resamples)
    ]
    low, high = _percentiles(means, confidence)
    return Interval(sum(t) / len(t) - sum(b) / len(b), low, high, confidence, resamples)
