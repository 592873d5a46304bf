"""The statistics against values computed by hand (worked out in the comments)."""

import math
import random

import pytest

from premath.runner.report.stats import (
    cohens_h,
    fisher_exact_p,
    holm,
    magnitude,
    mcnemar,
    mcnemar_chi2_cc,
    mcnemar_exact_p,
    paired_bootstrap,
    unpaired_bootstrap,
)


@pytest.mark.parametrize(
    ("b", "c", "expected"),
    [
        (0, 0, 1.0),
        (0, 5, 0.0625),  # 2 * C(5,0) / 2^5 = 2/32
        (2, 8, 0.109375),  # 2 * (1 + 10 + 45) / 1024 = 112/1024
        (8, 2, 0.109375),  # symmetric
        (3, 3, 1.0),  # 2 * (1 + 6 + 15 + 20) / 64 = 84/64, capped at 1
        (2, 4, 0.6875),  # 2 * (1 + 6 + 15) / 64 = 44/64
    ],
)
def test_mcnemar_exact(b, c, expected):
    assert mcnemar_exact_p(b, c) == expected


def test_mcnemar_chi2_with_continuity_correction():
    chi2, p = mcnemar_chi2_cc(10, 25)
    assert chi2 == pytest.approx(196 / 35)  # (|10 - 25| - 1)^2 / 35 = 5.6
    assert p == pytest.approx(0.017961, abs=1e-6)  # chi-square(1) upper tail at 5.6
    assert mcnemar_chi2_cc(0, 0) == (0.0, 1.0)
    assert mcnemar_chi2_cc(5, 5) == (0.0, 1.0)  # |b - c| - 1 clipped at 0


def test_mcnemar_switches_to_chi2_at_25_discordant_pairs():
    small, large = mcnemar(2, 8), mcnemar(10, 15)
    assert (small.method, small.statistic, small.p_value) == ("exact", None, 0.109375)
    assert large.method == "chi2_cc"
    assert large.statistic == pytest.approx(16 / 25)  # (5 - 1)^2 / 25
    assert mcnemar(12, 12).method == "exact"  # 24 discordant pairs: still exact
    assert (mcnemar(12, 13).method, mcnemar(12, 13).p_value) == ("chi2_cc", 1.0)


def test_fisher_exact_matches_the_tea_tasting_example():
    assert fisher_exact_p(3, 1, 1, 3) == pytest.approx(34 / 70)  # 0.4857
    assert fisher_exact_p(4, 0, 0, 4) == pytest.approx(2 / 70)
    assert fisher_exact_p(0, 0, 0, 0) == 1.0
    assert fisher_exact_p(2, 2, 2, 2) == pytest.approx(1.0)


def test_cohens_h_and_its_magnitude():
    assert cohens_h(0.5, 0.5) == 0.0
    assert cohens_h(1.0, 0.0) == pytest.approx(math.pi)
    assert cohens_h(0.75, 0.5) == pytest.approx(math.pi / 6)  # 2*pi/3 - pi/2
    assert cohens_h(0.5, 0.75) == pytest.approx(-math.pi / 6)
    assert [magnitude(h) for h in (0.0, 0.19, 0.2, -0.49, 0.5, 0.79, 0.8, -3)] == [
        "negligible",
        "negligible",
        "small",
        "small",
        "medium",
        "medium",
        "large",
        "large",
    ]


def test_holm_adjusts_step_down_and_keeps_order():
    # sorted: 0.01 * 3 = 0.03; 0.03 * 2 = 0.06; 0.04 * 1 = 0.04 -> monotone 0.06
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.6, 0.9]) == [1.0, 1.0]
    assert holm([]) == []


class ScriptedRandom(random.Random):
    """`choices` returns prepared samples, so the percentile rule can be checked exactly."""

    def __init__(self, samples):
        super().__init__(0)
        self.samples = iter(samples)

    def choices(self, population, weights=None, *, cum_weights=None, k=1):
        return next(self.samples)


def test_bootstrap_percentiles_pick_the_documented_order_statistics():
    # 40 resamples with means 0 .. 39. At 95% the rule picks order statistic floor(0.025 * 40),
    # which is 1, and ceil(0.975 * 40) - 1, which is 38.
    samples = [[float(i)] for i in reversed(range(40))]
    interval = paired_bootstrap([5.0], resamples=40, confidence=0.95, rng=ScriptedRandom(samples))
    assert interval is not None
    assert (interval.estimate, interval.low, interval.high) == (5.0, 1.0, 38.0)


def test_bootstrap_is_seeded_and_exact_on_constant_differences():
    diffs = [1.0, 0.0, -1.0, 1.0, 1.0, 0.0]
    first = paired_bootstrap(diffs, resamples=500, confidence=0.9, rng=random.Random(3))
    again = paired_bootstrap(diffs, resamples=500, confidence=0.9, rng=random.Random(3))
    assert first == again
    assert first is not None
    assert first.estimate == pytest.approx(2 / 6)
    assert first.low <= first.estimate <= first.high
    constant = paired_bootstrap([1.0] * 5, resamples=100, confidence=0.95, rng=random.Random(1))
    assert constant is not None
    assert (constant.estimate, constant.low, constant.high) == (1.0, 1.0, 1.0)
    assert paired_bootstrap([], resamples=10, confidence=0.95, rng=random.Random(1)) is None


def test_unpaired_bootstrap_estimates_the_difference_of_means():
    interval = unpaired_bootstrap(
        [1.0, 1.0, 0.0, 1.0],
        [0.0, 0.0, 1.0],
        resamples=300,
        confidence=0.95,
        rng=random.Random(9),
    )
    assert interval is not None
    assert interval.estimate == pytest.approx(0.75 - 1 / 3)
    assert -1.0 <= interval.low <= interval.estimate <= interval.high <= 1.0
    assert unpaired_bootstrap([], [1.0], resamples=10, confidence=0.9, rng=random.Random(1)) is None
