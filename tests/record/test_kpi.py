"""The throughput KPI against the reference's worked example (§B8), with its bugs fixed."""

import tempfile

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from premath.record.kpi import kpi_report, worker_id_of


def _row(step, issue, result, finished):
    row = {"schema": 1, "stepKind": "premath.harness.step.v1", "stepId": step}
    if issue:
        row["issueId"] = issue
    row.update(action="worker.loop", resultClass=result, finishedAt=finished)
    return orjson.dumps(row) + b"\n"


EXAMPLE = b"".join(
    (
        _row("worker.1.bd-1.1", "bd-1", "completed", "2026-02-22T10:00:00Z"),
        _row("worker.2.bd-2.1", "bd-2", "retry_needed_lease_active", "2026-02-22T11:00:00Z"),
        _row("worker.1.bd-3.2", "bd-3", "completed", "2026-02-22T12:00:00Z"),
        _row("worker.2.bd-4.2", "bd-4", "Completed", "2026-02-22T13:30:00Z"),
        _row("old.bd-0.1", "bd-0", "completed", "2026-02-20T13:29:59Z"),
    )
)


def test_reference_example_with_workers_named_by_worker_id(workdir):
    (workdir / "t.jsonl").write_bytes(EXAMPLE)
    report = kpi_report(trajectory_path="t.jsonl")
    assert (report["windowStart"], report["windowEnd"]) == (
        "2026-02-21T13:30:00Z",
        "2026-02-22T13:30:00Z",
    )
    assert report["counts"] == {
        "windowRows": 4,
        "completedRows": 3,
        "failedRows": 1,
        "activeWorkers": 2,  # the reference says 1 (["worker"]): bug B2, divergence D5-4
        "workerIds": ["worker.1", "worker.2"],
    }
    assert report["ratios"] == {
        "gatePassRate": 0.75,
        "throughputPerWorkerPerDay": 1.5,
        "kpi": 1.125,
    }
    assert report["decision"] == {"state": "pass", "reason": "kpi at or above target threshold"}
    assert report["refs"]["trajectoryPath"] == str(workdir / "t.jsonl")
    assert report["kpiKind"] == "premath.multithread.throughput.v1"


def test_missing_trajectory_is_insufficient_data(workdir):
    report = kpi_report()
    assert report["windowEnd"] == "1970-01-01T00:00:00Z"
    assert report["counts"]["windowRows"] == 0
    assert report["ratios"] == {"gatePassRate": 0.0, "throughputPerWorkerPerDay": 0.0, "kpi": 0.0}
    assert report["decision"]["state"] == "insufficient_data"


@pytest.mark.parametrize(
    ("rows", "state"),
    [
        ([("w.bd-1.1", "bd-1", "completed")] * 2, "insufficient_data"),
        ([("w.bd-1.1", "bd-1", "failed_x")] * 3, "rollback"),
    ],
)
def test_decision_states(workdir, rows, state):
    data = b"".join(_row(s, i, r, "2026-02-22T10:00:00Z") for s, i, r in rows)
    (workdir / "t.jsonl").write_bytes(data)
    assert kpi_report(trajectory_path="t.jsonl")["decision"]["state"] == state


def test_watch_between_thresholds(workdir):
    data = _row("w.bd-1.1", "bd-1", "completed", "2026-02-22T10:00:00Z") + b"".join(
        _row(f"w.bd-{n}.1", f"bd-{n}", "failed", "2026-02-22T10:00:00Z") for n in range(2, 4)
    )
    (workdir / "t.jsonl").write_bytes(data)
    report = kpi_report(trajectory_path="t.jsonl", window_hours=48)
    # completed 1 * 24/48 / 1 worker = 0.5; times pass rate 1/3 = 0.166667: rollback at 0.4
    assert report["ratios"]["kpi"] == 0.166667
    assert (
        kpi_report(trajectory_path="t.jsonl", target_kpi=0.2, rollback_kpi=0.1, window_hours=48)[
            "decision"
        ]["state"]
        == "watch"
    )


def test_kpi_and_the_failed_query_agree_on_rows_without_an_issue(cli_run, workdir):
    """D25-2: a row is failed for the KPI exactly when `query --mode failed` lists it; a passing
    row without an issue (a check an agent appended) completed no issue: it is left out."""
    data = b"".join(
        (
            _row("check.1", None, "completed", "2026-02-22T10:00:00Z"),
            _row("w.runtime.1", None, "failed_runtime_error", "2026-02-22T10:00:00Z"),
            _row("w.bd-1.1", "bd-1", "completed", "2026-02-22T10:00:00Z"),
            _row("w.bd-2.1", "bd-2", "escalated_mark_blocked", "2026-02-22T10:00:00Z"),
        )
    )
    (workdir / "t.jsonl").write_bytes(data)
    counts = kpi_report(trajectory_path="t.jsonl")["counts"]
    listed = cli_run(
        "harness-trajectory", "query", "--path", "t.jsonl", "--mode", "failed", "--json"
    ).json
    assert sorted(item["stepId"] for item in listed["items"]) == ["w.bd-2.1", "w.runtime.1"]
    assert counts["failedRows"] == listed["failedCount"] == 2
    assert (counts["windowRows"], counts["completedRows"], counts["workerIds"]) == (3, 1, ["w"])


@pytest.mark.parametrize(
    ("step", "issue", "worker"),
    [
        ("worker.1.bd-7.3", "bd-7", "worker.1"),
        ("alice.bd-7.1", "bd-7", "alice"),
        ("a.b.c.x.y.12", "x.y", "a.b.c"),
        ("worker.1.bd-7.x", "bd-7", "worker"),
        ("odd", "bd-7", "odd"),
        ("", "bd-7", "unknown"),
    ],
)
def test_worker_id_of(step, issue, worker):
    assert worker_id_of(step, issue) == worker


def test_cli_json_and_text(cli_run, workdir):
    (workdir / ".premath").mkdir()
    (workdir / ".premath/harness_trajectory.jsonl").write_bytes(EXAMPLE)
    result = cli_run("harness-kpi", "--json")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.json["decision"]["state"] == "pass"
    text = cli_run("harness-kpi")
    assert text.stdout.splitlines() == [
        "[harness-kpi] deterministic throughput benchmark",
        "  window: 2026-02-21T13:30:00Z -> 2026-02-22T13:30:00Z (24h)",
        "  counts: rows=4 completed=3 failed=1 workers=2",
        "  ratios: pass_rate=0.75 throughput_per_worker_day=1.5 kpi=1.125",
        "  thresholds: target=0.8 rollback=0.4 min_rows=3",
        "  decision: pass (kpi at or above target threshold)",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--window-hours", "0"), "--window-hours must be > 0"),
        (("--min-sample-rows", "0"), "--min-sample-rows must be >= 1"),
        (("--target-kpi", "0"), "--target-kpi must be > 0"),
        (("--rollback-kpi", "-1"), "--rollback-kpi must be > 0"),
        (("--target-kpi", "0.3"), "--target-kpi must be greater than --rollback-kpi"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(cli_run, args, message):
    """The reference crashes here with NameError (its bug B1)."""
    result = cli_run("harness-kpi", *args, "--json")
    assert result.exit_code == 2
    assert result.stderr == f"error: {message}\n"
    assert result.json["error"]["message"] == message


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{nope}\n", "invalid JSON in"),
        (b"[1]\n", "trajectory row must be object"),
        (b'{"stepId":"a","action":"b","resultClass":"c"}\n', "missing required fields"),
        (
            b'{"stepId":"a","action":"b","resultClass":"c","finishedAt":"yesterday"}\n',
            "finishedAt must be RFC3339",
        ),
    ],
)
def test_bad_rows_exit_2_naming_the_line(cli_run, workdir, content, message):
    (workdir / "t.jsonl").write_bytes(content)
    result = cli_run("harness-kpi", "--trajectory-path", "t.jsonl")
    assert result.exit_code == 2
    assert message in result.stderr
    assert "t.jsonl:1" in result.stderr


def test_torn_last_line_is_skipped(cli_run, workdir):
    (workdir / "t.jsonl").write_bytes(EXAMPLE + b'{"stepId":"x')
    result = cli_run("harness-kpi", "--trajectory-path", "t.jsonl", "--json")
    assert result.exit_code == 0
    assert result.json["counts"]["windowRows"] == 4
    assert "incomplete last line" in result.stderr


_ID_TEXT = st.text(alphabet="abcdefghij.-_0123456789", min_size=1, max_size=12)


@given(worker=_ID_TEXT, issue=_ID_TEXT, index=st.integers(min_value=0, max_value=10**6))
def test_worker_id_round_trips_through_the_step_id(worker, issue, index):
    assert worker_id_of(f"{worker}.{issue}.{index}", issue) == worker


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["completed", "ok", "failed_x", "Passed"]),
            st.booleans(),
            st.integers(0, 72),
        ),
        max_size=30,
    )
)
def test_counts_and_ratios_are_consistent(rows):
    with tempfile.TemporaryDirectory() as folder:
        path = f"{folder}/t.jsonl"
        with open(path, "wb") as handle:
            for n, (result, has_issue, hour) in enumerate(rows):
                finished = f"2026-02-{20 + hour // 24:02d}T{hour % 24:02d}:00:00Z"
                handle.write(
                    _row(f"w{n % 3}.bd-{n}.1", f"bd-{n}" if has_issue else None, result, finished)
                )
        report = kpi_report(trajectory_path=path)
    counts, ratios = report["counts"], report["ratios"]
    assert counts["completedRows"] + counts["failedRows"] == counts["windowRows"] <= len(rows)
    assert 0.0 <= ratios["gatePassRate"] <= 1.0
    assert counts["activeWorkers"] == len(counts["workerIds"]) <= 3
    assert ratios["kpi"] <= ratios["throughputPerWorkerPerDay"] + 1e-6
