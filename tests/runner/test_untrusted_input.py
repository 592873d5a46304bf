"""Untrusted bytes (result.json, experiment files, datasets, trials.jsonl) never crash us."""

import contextlib
import json
import os
import tempfile
from pathlib import Path

import orjson
from hypothesis import example, given
from hypothesis import strategies as st

from premath.errors import PremathError
from premath.runner.dataset import parse_tasks
from premath.runner.experiment import parse_experiment
from premath.runner.report.analysis import build_report
from premath.runner.results import parse_result
from premath.runner.runs import open_run, resume_experiment, run_experiment
from tests.runner.conftest import make_experiment

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


big_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(
    st.binary(max_size=200)
    | json_values.map(orjson.dumps)
    | st.fixed_dictionaries({"outcome": st.just("success"), "metrics": big_json_values}).map(
        lambda document: json.dumps(document).encode()  # ints beyond 64 bits, NaN, Infinity
    )
)
@example(b'{"outcome": "success", "metrics": {"n": 123456789012345678901234567890}}')
@example(b'{"outcome": "success", "metrics": {"n": NaN, "m": -Infinity}}')
def test_any_result_bytes_give_a_recordable_verdict(data):
    verdict = parse_result(data)
    assert verdict.outcome in ("success", "failure", "error")
    orjson.dumps(verdict.metrics)
    if verdict.outcome == "error":
        assert verdict.error_class in ("result_invalid", "harness_error")


@given(
    st.fixed_dictionaries(
        {"outcome": st.sampled_from(["success", "failure"])},
        optional={
            "objective": st.fixed_dictionaries(
                {
                    "name": st.text(min_size=1),
                    "value": st.floats(allow_nan=False, allow_infinity=False),
                }
            ),
            "metrics": st.dictionaries(st.text(), json_values, max_size=3),
            "anything": json_values,
        },
    )
)
def test_valid_results_keep_outcome_objective_and_metrics(document):
    verdict = parse_result(orjson.dumps(document))
    assert verdict.outcome == document["outcome"]
    assert verdict.error_class is None
    objective = document.get("objective")
    assert (verdict.objective.model_dump() if verdict.objective else None) == objective
    assert verdict.metrics == document.get("metrics", {})


@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_any_experiment_bytes_raise_only_premath_errors(data):
    with contextlib.suppress(PremathError):
        parse_experiment(data, Path("experiment.yaml"))


@given(st.lists(st.binary(max_size=40) | json_values.map(orjson.dumps), max_size=8))
def test_any_dataset_lines_raise_only_premath_errors(lines):
    try:
        tasks = parse_tasks(lines, Path("tasks.jsonl"), None)
    except PremathError:
        return
    assert len({task.id for task in tasks}) == len(tasks)


def test_a_torn_or_foreign_trials_row_is_skipped_and_its_slot_runs_again(workdir, clock, capsys):
    experiment = make_experiment(workdir / "exp", [{"id": "a"}, {"id": "b"}])
    run_experiment(os.fspath(experiment), clock=clock, lock_timeout=5.0, run_id="r1")
    log = workdir / ".premath/runs/r1/trials.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(lines[0] + b'{"not": "a trial"}\n' + lines[1][:30])  # b's row torn
    summary = resume_experiment("r1", clock=clock, lock_timeout=5.0)
    assert summary["trials"]["ran"] == 1
    assert summary["trials"]["success"] == 2
    err = capsys.readouterr().err
    assert "trials.jsonl:2: skipped a row that is not a trial record" in err
    assert "skipped an incomplete last line" in err
    report = build_report(open_run("r1"), resamples=100)
    assert report["trials"]["final"] == 2


def test_the_html_page_escapes_names_from_the_experiment(workdir, clock):
    from premath.runner.report.render import report_html

    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "exp"
        experiment = make_experiment(
            folder,
            [{"id": "a"}],
            variants=[{"variant_id": "<script>x</script>", "args": []}],
            experiment={"id": "e", "name": "<img src=x onerror=alert(1)>"},
        )
        run_experiment(os.fspath(experiment), clock=clock, lock_timeout=5.0, run_id="r1")
    page = report_html(build_report(open_run("r1"), resamples=100))
    assert "<script>" not in page
    assert "<img" not in page
    assert "&lt;script&gt;x&lt;/script&gt;" in page
