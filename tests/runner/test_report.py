"""The report of a real run whose outcome table is known, checked against hand-computed values."""

import math
import os

import pytest

from premath.runner.report.analysis import build_report
from premath.runner.report.render import report_html, report_text
from premath.runner.runs import open_run, run_experiment
from tests.runner.conftest import make_experiment

# Tasks 0-9: control succeeds on 0-5, treat on 2-9, other on 0-9. Task 10: control succeeds,
# treat reports an error (its pair is dropped), other fails.
#   treat vs control: pairs 10; both 2-5 (4 ties), control only 0-1 (b=2), treat only 6-9
#     (c=4), so W/L/T 4/2/4; exact McNemar p = 2*(1+6+15)/64 = 0.6875; success diff on pairs
#     = 0.8 - 0.6 = 0.2; Cohen's h = 2 asin(sqrt 0.8) - 2 asin(sqrt 0.6).
#   other vs control: pairs 11; other only 6-9 (c=4), control only 10 (b=1), W/L/T 4/1/6;
#     exact p = 2*(1+5)/32 = 0.375.
#   dead vs control: every dead trial is an error, so no task pairs: p, Holm, CI all an en dash.
#   Holm over the two comparisons with data, [0.6875, 0.375]: 0.375*2 = 0.75, then
#     max(0.75, 0.6875) = 0.75 (counting dead too would give 1.0 for both).


def _tasks():
    tasks = []
    for i in range(11):
        modes = {
            "control": "ok" if i <= 5 or i == 10 else "fail",
            "treat": "harness_error" if i == 10 else ("ok" if i >= 2 else "fail"),
            "other": "fail" if i == 10 else "ok",
            "dead": "harness_error",
        }
        tasks.append({"id": f"t{i:02d}", "mode": "by_variant", "modes": modes})
    return tasks


@pytest.fixture(scope="module")
def state(tmp_path_factory):
    """One real run shared by the read-only tests of this module (33 harness processes)."""
    from datetime import UTC, datetime

    from premath.clock import FrozenClock

    root = tmp_path_factory.mktemp("report")
    experiment = make_experiment(
        root / "exp",
        _tasks(),
        variants=[
            {"variant_id": "treat", "args": ["--variant", "treat"]},
            {"variant_id": "other", "args": ["--variant", "other"]},
            {"variant_id": "dead", "args": ["--variant", "dead"]},
        ],
        concurrency=4,
    )
    clock = FrozenClock(datetime(2026, 3, 1, 10, 0, 0, tzinfo=UTC))
    runs = os.fspath(root / "runs")
    run_experiment(os.fspath(experiment), clock=clock, lock_timeout=5.0, run_id="r1", runs_dir=runs)
    return open_run("r1", runs)


def test_variant_rows_keep_errors_apart_from_failures(state):
    report = build_report(state, resamples=500)
    variants = {v["variant_id"]: v for v in report["variants"]}
    control, treat, other = variants["control"], variants["treat"], variants["other"]
    assert (control["success"], control["failure"], control["error"]) == (7, 4, 0)
    assert control["pass_rate"] == pytest.approx(7 / 11)
    assert (treat["success"], treat["failure"], treat["error"]) == (8, 2, 1)
    assert treat["pass_rate"] == pytest.approx(0.8)
    assert treat["errors_by_class"] == {"harness_error": 1}
    assert treat["objective"] == {"name": "score", "mean": pytest.approx(0.8), "n": 10}
    assert (other["success"], other["failure"]) == (10, 1)
    assert control["is_baseline"]
    assert not treat["is_baseline"]


def test_paired_comparisons_match_the_hand_computed_table(state):
    report = build_report(state, resamples=500)
    treat, other, dead = report["comparisons"]
    assert (treat["tasks"], treat["tasks_dropped"], treat["trials"]) == (10, 1, 20)
    assert (treat["wins"], treat["losses"], treat["ties"]) == (4, 2, 4)
    assert treat["test"] == {"name": "sign", "method": "exact", "b": 2, "c": 4, "statistic": None}
    assert treat["p_value"] == 0.6875
    assert treat["success_diff"]["estimate"] == pytest.approx(0.2)
    assert treat["objective_diff"]["estimate"] == pytest.approx(0.2)
    expected_h = 2 * math.asin(math.sqrt(0.8)) - 2 * math.asin(math.sqrt(0.6))
    assert treat["cohens_h"] == pytest.approx(expected_h)
    assert treat["magnitude"] == "small"
    assert (other["wins"], other["losses"], other["ties"]) == (4, 1, 6)
    assert other["p_value"] == pytest.approx(0.375)
    assert treat["p_holm"] == pytest.approx(0.75)
    assert other["p_holm"] == pytest.approx(0.75)
    assert (dead["tasks"], dead["tasks_dropped"], dead["trials"]) == (0, 11, 0)
    assert (dead["test"], dead["p_value"], dead["p_holm"]) == (None, None, None)
    assert (dead["success_diff"], dead["cohens_h"]) == (None, None)
    low, high = treat["success_diff"]["low"], treat["success_diff"]["high"]
    assert -1.0 <= low <= 0.2 <= high <= 1.0


def test_the_report_is_deterministic_for_a_seed(state):
    first = build_report(state, resamples=300, seed=5)
    assert build_report(state, resamples=300, seed=5) == first
    assert first["bootstrap"] == {"resamples": 300, "confidence": 0.95, "seed": 5}
    assert build_report(state, resamples=300)["bootstrap"]["seed"] == 7  # design.seed


def test_text_table_and_html_page(state):
    report = build_report(state, resamples=300)
    text = report_text(report, width=200)  # a wide terminal: each table whole
    assert (
        "control (baseline)  11      7        4        0      63.6%      11     63.6% [35.4%"
        in text
    )
    assert (
        "treat    10     20      4/2/4  exact sign test (McNemar)  0.688  0.750   +20.0% [" in text
    )
    assert "  treat: harness_error 1\n" in text
    assert "t09   0/1      1/1 win   1/1 win   \u2013 +1 err\n" in text
    assert "t10   1/1      \u2013 +1 err  0/1 loss  \u2013 +1 err\n" in text
    dash = "\u2013"  # an en dash: no data
    assert (
        f"dead     0      0       {dash}      {dash}{' ' * 26}{dash}      {dash}       {dash}"
        in text
    )
    page = report_html(report)
    assert page.count("<svg") == 2  # pass rates, differences
    assert "no data (\u2013)" in page  # dead's row in the difference plot
    assert "<script" not in page
    assert "http" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_unpaired_and_none_designs(workdir, clock):
    experiment = make_experiment(
        workdir / "exp",
        _tasks(),
        variants=[{"variant_id": "treat", "args": ["--variant", "treat"]}],
        design={"comparison": "unpaired"},
    )
    run_experiment(os.fspath(experiment), clock=clock, lock_timeout=5.0, run_id="u1")
    (comparison,) = build_report(open_run("u1"), resamples=300)["comparisons"]
    # treat 8 of 10 judged, control 7 of 11: Fisher on [[8, 2], [7, 4]]
    assert comparison["method"] == "unpaired"
    assert comparison["test"] == {"name": "fisher", "method": "exact"}
    assert comparison["wins"] is None
    assert comparison["success_diff"]["estimate"] == pytest.approx(0.8 - 7 / 11)
    assert comparison["p_value"] == pytest.approx(0.6351, abs=1e-4)
    assert comparison["p_holm"] is None
    resolved = open_run("u1")
    assert resolved.spec.design.comparison == "unpaired"


def test_report_counts_pending_trials(workdir, clock):
    from premath.runner.runs import create_run

    experiment = make_experiment(workdir / "exp", [{"id": "a"}, {"id": "b"}])
    create_run(os.fspath(experiment), run_id="p1", now=clock.now())
    report = build_report(open_run("p1"), resamples=100)
    assert report["trials"] == {"scheduled": 2, "final": 0, "pending": 2}
    assert report["variants"][0]["pass_rate"] is None
    assert report["variants"][0]["task_pass_rate_ci"] is None
    assert "control (baseline)  0       0        0        0      \u2013          0      \u2013" in (
        report_text(report, width=200)
    )


def test_comparison_none_reports_variants_only(workdir, clock):
    experiment = make_experiment(
        workdir / "exp",
        _tasks()[:3],
        variants=[{"variant_id": "treat", "args": ["--variant", "treat"]}],
        design={"comparison": "none"},
    )
    run_experiment(os.fspath(experiment), clock=clock, lock_timeout=5.0, run_id="n1")
    report = build_report(open_run("n1"), resamples=100)
    assert report["comparisons"] == []
    assert [v["variant_id"] for v in report["variants"]] == ["control", "treat"]
    assert "against control (" not in report_text(report)
    assert 'id="difference-plot"' not in report_html(report)
    assert 'id="pass-rate-plot"' in report_html(report)


def test_metadata_names_the_commit_the_schedule_and_the_times(workdir, clock):
    sha = "0123456789abcdef0123456789abcdef01234567"
    (workdir / "repo" / ".git" / "refs" / "heads").mkdir(parents=True)
    (workdir / "repo" / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (workdir / "repo" / ".git" / "refs" / "heads" / "main").write_text(sha + "\n")
    experiment = make_experiment(workdir / "repo" / "bench" / "exp", [{"id": "a"}])
    run_experiment(os.fspath(experiment), clock=clock, lock_timeout=5.0, run_id="m1")
    report = build_report(open_run("m1"), resamples=100)
    assert report["metadata"] == {
        "commit": sha,
        "seed": 7,
        "scheduling": "paired_interleaved",
        "executor": "local",
        "created_at": "2026-03-01T10:00:00Z",
        "started_at": "2026-03-01T10:00:00Z",
        "finished_at": "2026-03-01T10:00:00Z",
    }
    assert f"  commit: {sha}\n  seed: 7\n  schedule: paired_interleaved\n" in report_text(report)
    outside = make_experiment(workdir / "plain", [{"id": "a"}])
    run_experiment(os.fspath(outside), clock=clock, lock_timeout=5.0, run_id="m2")
    assert build_report(open_run("m2"), resamples=100)["metadata"]["commit"] is None
