"""Experiment runs end to end with real harness processes: records, verdicts, retry, resume."""

import os
import sys
from pathlib import Path

import orjson
import pytest

from premath.errors import Conflict, InputInvalid, NotFound
from premath.runner.runs import (
    create_run,
    execute_run,
    latest_records,
    open_run,
    resume_experiment,
    run_experiment,
)
from tests.runner.conftest import final_records, make_experiment
from tests.support.processes import read_pid, wait_dead


def run(experiment: Path, clock, **kwargs):
    return run_experiment(os.fspath(experiment), clock=clock, lock_timeout=5.0, **kwargs)


def rows(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_every_trial_gets_one_final_record_with_the_harness_verdict(workdir, clock):
    experiment = make_experiment(
        workdir / "exp",
        [{"id": "a", "mode": "ok", "score": 0.5}, {"id": "b", "mode": "fail"}],
        variants=[{"variant_id": "treat", "args": ["--variant", "treat"]}],
        design={"replications": 2},
    )
    summary = run(experiment, clock, run_id="r1")
    assert summary["trials"] == {
        "scheduled": 8,
        "ran": 8,
        "success": 4,
        "failure": 4,
        "error": 0,
        "pending": 0,
    }
    records = rows(workdir / ".premath/runs/r1/trials.jsonl")
    assert len(records) == 8
    first = records[0]
    assert list(first) == [
        "record_kind",
        "run_id",
        "trial_id",
        "schedule_index",
        "variant_id",
        "task_id",
        "task_index",
        "replication",
        "attempt",
        "final",
        "outcome",
        "error_class",
        "message",
        "objective",
        "metrics",
        "exit_code",
        "signal",
        "duration_ms",
        "executor",
        "started_at",
        "finished_at",
        "stdout_truncated",
        "stderr_truncated",
    ]
    by_slot = {(r["variant_id"], r["task_id"], r["replication"]): r for r in records}
    assert by_slot[("control", "a", 0)]["objective"] == {"name": "score", "value": 0.5}
    assert by_slot[("treat", "b", 1)]["outcome"] == "failure"
    assert {r["attempt"] for r in records} == {1}
    assert {r["executor"] for r in records} == {"local"}
    assert {r["started_at"] for r in records} == {"2026-03-01T10:00:00Z"}
    assert sorted(r["schedule_index"] for r in records) == list(range(8))


def test_trajectory_rows_mark_each_trial_start_and_end(workdir, clock):
    experiment = make_experiment(workdir / "exp", [{"id": "a"}, {"id": "b", "mode": "exit3"}])
    run(experiment, clock, run_id="r1", issue_id="bd-9")
    lines = (workdir / ".premath/runs/r1/harness_trajectory.jsonl").read_bytes().splitlines()
    steps = [orjson.loads(line) for line in lines]
    assert len(steps) == 4
    ends = sorted(
        (s for s in steps if s["action"] == "experiment.trial.end"), key=lambda s: s["stepId"]
    )
    assert [s["resultClass"] for s in ends] == ["success", "harness_exit_nonzero"]
    digest = open_run("r1").manifest["experiment_digest"]
    assert lines[[s["stepId"] for s in steps].index(ends[0]["stepId"])] == (
        b'{"schema":1,"stepKind":"premath.harness.step.v1",'
        b'"stepId":"r1.000000-control-a-r0.a1.end","issueId":"bd-9",'
        b'"action":"experiment.trial.end","resultClass":"success",'
        b'"witnessRefs":["trial://r1/000000-control-a-r0/attempt-1"],'
        b'"lineageRefs":["experiment://exp/' + digest.encode() + b'","run://r1"],'
        b'"startedAt":"2026-03-01T10:00:00Z","finishedAt":"2026-03-01T10:00:00Z"}'
    )
    starts = [s for s in steps if s["action"] == "experiment.trial.start"]
    assert {s["resultClass"] for s in starts} == {"started"}
    assert all("startedAt" not in s for s in starts)


def test_trajectory_can_go_to_the_project_file(workdir, clock):
    experiment = make_experiment(workdir / "exp", [{"id": "a"}])
    run(experiment, clock, run_id="r1", trajectory_path=".premath/harness_trajectory.jsonl")
    assert len((workdir / ".premath/harness_trajectory.jsonl").read_bytes().splitlines()) == 2
    assert not (workdir / ".premath/runs/r1/harness_trajectory.jsonl").exists()


@pytest.mark.parametrize(
    ("mode", "error_class"),
    [
        ("exit3", "harness_exit_nonzero"),
        ("noresult", "result_missing"),
        ("notjson", "result_invalid"),
        ("badschema", "result_invalid"),
        ("huge", "result_invalid"),
        ("symlink", "result_invalid"),
        ("harness_error", "harness_error"),
    ],
)
def test_misbehaving_harnesses_become_error_trials(workdir, clock, mode, error_class):
    experiment = make_experiment(workdir / "exp", [{"id": "t", "mode": mode}])
    summary = run(experiment, clock, run_id="r1")
    assert summary["trials"]["error"] == 1
    (record,) = rows(workdir / ".premath/runs/r1/trials.jsonl")
    assert (record["outcome"], record["error_class"]) == ("error", error_class)
    assert record["message"]


def test_a_missing_command_is_a_spawn_failed_trial(workdir, clock):
    experiment = make_experiment(
        workdir / "exp", [{"id": "t"}], runtime={"command": ["./no-such-harness"]}
    )
    run(experiment, clock, run_id="r1")
    (record,) = rows(workdir / ".premath/runs/r1/trials.jsonl")
    assert (record["error_class"], record["exit_code"]) == ("spawn_failed", None)


def test_a_harness_that_never_exits_is_a_timeout_and_its_grandchild_dies(workdir, clock):
    pid_file = workdir / "grandchild.pid"
    experiment = make_experiment(
        workdir / "exp",
        [{"id": "t", "mode": "grandchild", "pid_file": os.fspath(pid_file)}],
        runtime={"timeout_ms": 1500},
    )
    run(experiment, clock, run_id="r1")
    (record,) = rows(workdir / ".premath/runs/r1/trials.jsonl")
    assert (record["outcome"], record["error_class"]) == ("error", "timeout")
    assert wait_dead(read_pid(pid_file))


def test_a_flood_on_stdout_is_capped_and_the_trial_still_counts(workdir, clock):
    experiment = make_experiment(workdir / "exp", [{"id": "t", "mode": "spew", "mb": 30}])
    run(experiment, clock, run_id="r1")
    (record,) = rows(workdir / ".premath/runs/r1/trials.jsonl")
    assert (record["outcome"], record["stdout_truncated"]) == ("success", True)
    stdout = workdir / ".premath/runs/r1/trials/000000-control-t-r0/attempt-1/stdout.txt"
    assert stdout.stat().st_size == 10 * 1024 * 1024


def test_task_files_are_read_only_and_hold_the_dataset_line(workdir, clock):
    experiment = make_experiment(workdir / "exp", [{"id": "t", "mode": "ok", "x": "é"}])
    run(experiment, clock, run_id="r1")
    task = workdir / ".premath/runs/r1/trials/000000-control-t-r0/attempt-1/in/task.json"
    assert task.read_bytes() == orjson.dumps({"id": "t", "mode": "ok", "x": "é"}) + b"\n"
    assert task.stat().st_mode & 0o222 == 0


def test_retry_runs_error_trials_again_and_keeps_every_attempt(workdir, clock):
    marker = workdir / "flaky"
    experiment = make_experiment(
        workdir / "exp",
        [{"id": "t", "mode": "flaky", "marker": os.fspath(marker)}],
        retry={"max_attempts": 3, "retry_on": ["error"]},
    )
    summary = run(experiment, clock, run_id="r1")
    assert summary["trials"]["success"] == 1
    records = rows(workdir / ".premath/runs/r1/trials.jsonl")
    assert [(r["attempt"], r["final"], r["outcome"]) for r in records] == [
        (1, False, "error"),
        (2, True, "success"),
    ]
    attempts = sorted(
        p.name for p in (workdir / ".premath/runs/r1/trials/000000-control-t-r0").iterdir()
    )
    assert attempts == ["attempt-1", "attempt-2"]


def test_retry_stops_after_max_attempts(workdir, clock):
    experiment = make_experiment(
        workdir / "exp", [{"id": "t", "mode": "exit3"}], retry={"max_attempts": 2}
    )
    run(experiment, clock, run_id="r1")
    records = rows(workdir / ".premath/runs/r1/trials.jsonl")
    assert [(r["attempt"], r["final"]) for r in records] == [(1, False), (2, True)]


def test_failures_are_not_retried_unless_asked(workdir, clock):
    experiment = make_experiment(
        workdir / "exp", [{"id": "t", "mode": "fail"}], retry={"max_attempts": 3}
    )
    run(experiment, clock, run_id="r1")
    assert len(rows(workdir / ".premath/runs/r1/trials.jsonl")) == 1


def test_resume_of_a_finished_run_runs_nothing(workdir, clock):
    experiment = make_experiment(workdir / "exp", [{"id": "a"}, {"id": "b"}])
    run(experiment, clock, run_id="r1")
    summary = resume_experiment("r1", clock=clock, lock_timeout=5.0)
    assert summary["trials"]["ran"] == 0
    assert summary["action"] == "experiment.resume"
    assert len(rows(workdir / ".premath/runs/r1/trials.jsonl")) == 2


def test_rerun_errors_redoes_only_error_trials_in_a_new_attempt(workdir, clock):
    marker = workdir / "flaky"
    experiment = make_experiment(
        workdir / "exp",
        [
            {"id": "good"},
            {"id": "flaky", "mode": "flaky", "marker": os.fspath(marker)},
            {"id": "bad", "mode": "fail"},
        ],
    )
    first = run(experiment, clock, run_id="r1")
    assert (first["trials"]["success"], first["trials"]["error"]) == (1, 1)
    summary = resume_experiment("r1", clock=clock, lock_timeout=5.0, rerun_errors=True)
    assert summary["trials"]["ran"] == 1
    assert (summary["trials"]["success"], summary["trials"]["error"]) == (2, 0)
    records = rows(workdir / ".premath/runs/r1/trials.jsonl")
    assert [(r["task_id"], r["attempt"], r["outcome"]) for r in records[3:]] == [
        ("flaky", 2, "success")
    ]
    flaky = workdir / ".premath/runs/r1/trials/000001-control-flaky-r0"
    assert sorted(p.name for p in flaky.iterdir()) == ["attempt-1", "attempt-2"]


def test_resume_skips_an_attempt_folder_left_by_a_crash(workdir, clock):
    experiment = make_experiment(workdir / "exp", [{"id": "a"}])
    state = create_run(os.fspath(experiment), run_id="r1", now=clock.now())
    (state.paths.trials_dir / "000000-control-a-r0" / "attempt-1" / "out").mkdir(parents=True)
    execute_run(state, clock=clock, lock_timeout=5.0)
    (record,) = latest_records(state.paths).values()
    assert (record.attempt, record.outcome) == (2, "success")


def test_concurrency_runs_trials_in_parallel_and_records_each_once(workdir, clock):
    tasks = [{"id": f"t{i}", "mode": "slow", "seconds": 0.3} for i in range(8)]
    experiment = make_experiment(workdir / "exp", tasks, concurrency=8)
    run(experiment, clock, run_id="r1")
    records = rows(workdir / ".premath/runs/r1/trials.jsonl")
    assert sorted(r["task_id"] for r in records) == sorted(t["id"] for t in tasks)


def test_task_ids_that_look_like_paths_stay_inside_the_run_folder(workdir, clock):
    tasks = [{"id": "../../escape"}, {"id": "/etc/passwd"}, {"id": "..", "mode": "ok"}]
    experiment = make_experiment(workdir / "exp", tasks)
    run(experiment, clock, run_id="r1")
    trial_dirs = sorted(p.name for p in (workdir / ".premath/runs/r1/trials").iterdir())
    assert trial_dirs == [
        "000000-control-escape-r0",
        "000001-control-etc_passwd-r0",
        "000002-control-task-r0",
    ]
    assert sorted(p.name for p in workdir.iterdir()) == [".premath", "exp"]
    records = rows(workdir / ".premath/runs/r1/trials.jsonl")
    assert sorted(r["task_id"] for r in records) == ["..", "../../escape", "/etc/passwd"]


def test_dataset_limit_and_id_digests(workdir, clock):
    experiment = make_experiment(
        workdir / "exp",
        [{"mode": "ok", "n": 1}, {"mode": "ok", "n": 2}, {"id": 3}],
        dataset={"limit": 2},
    )
    run(experiment, clock, run_id="r1")
    state = open_run("r1")
    assert [t.id for t in state.tasks] == [t.id for t in state.tasks if t.id.startswith("task_")]
    assert len(state.tasks) == 2


def test_run_id_clash_and_bad_run_id_are_refused(workdir, clock):
    experiment = make_experiment(workdir / "exp", [{"id": "a"}])
    run(experiment, clock, run_id="r1")
    with pytest.raises(Conflict, match="already exists"):
        run(experiment, clock, run_id="r1")
    with pytest.raises(InputInvalid, match="may only hold"):
        run(experiment, clock, run_id="../x")


def test_default_run_ids_are_unique_for_the_same_second(workdir, clock):
    experiment = make_experiment(workdir / "exp", [{"id": "a"}])
    first = run(experiment, clock)["run_id"]
    second = run(experiment, clock)["run_id"]
    assert (first, second) == ("exp-20260301T100000Z", "exp-20260301T100000Z-2")


def test_a_bad_experiment_writes_nothing(workdir, clock):
    experiment = make_experiment(workdir / "exp", [{"id": "a"}, {"id": "a"}])
    with pytest.raises(InputInvalid, match="duplicate task id 'a'"):
        run(experiment, clock)
    assert not (workdir / ".premath").exists()


def test_resume_of_an_unknown_run_is_not_found(workdir, clock):
    with pytest.raises(NotFound, match="run nope not found"):
        resume_experiment("nope", clock=clock, lock_timeout=5.0)


def test_an_edited_resolved_experiment_is_refused_on_resume(workdir, clock):
    experiment = make_experiment(workdir / "exp", [{"id": "a"}])
    run(experiment, clock, run_id="r1")
    resolved = workdir / ".premath/runs/r1/experiment.resolved.json"
    resolved.write_bytes(resolved.read_bytes().replace(b'"replications": 1', b'"replications": 2'))
    with pytest.raises(Exception, match="does not match its digest"):
        open_run("r1")


def test_the_harness_runs_in_the_experiment_folder_with_absolute_paths(workdir, clock):
    experiment = make_experiment(
        workdir / "exp",
        [{"id": "a"}],
        baseline={"variant_id": "control", "args": ["--variant", "control", "--x"]},
    )
    run(experiment, clock, run_id="r1")
    (record,) = final_records(open_run("r1")).values()
    attempt = (workdir / ".premath/runs/r1/trials/000000-control-a-r0/attempt-1").absolute()
    assert (
        record.metrics["argv"]
        == [
            "harness.py",
            "--variant",
            "control",
            "--x",
            os.fspath(attempt / "in/task.json"),
            os.fspath(attempt / "out/result.json"),
        ][1:]
    )
    assert record.metrics["cwd"] == os.fspath((workdir / "exp").absolute())


def test_the_harness_sees_only_the_allowlist_and_its_variant_env(workdir, clock, monkeypatch):
    monkeypatch.setenv("PREMATH_LOCK_TIMEOUT_SECONDS", "3")
    monkeypatch.setenv("AGENTLAB_RUN_ID", "leak")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "leak")
    experiment = make_experiment(
        workdir / "exp",
        [{"id": "a"}],
        variants=[{"variant_id": "treat", "args": ["--variant", "treat"], "env": {"DEBUG": "1"}}],
    )
    run(experiment, clock, run_id="r1")
    records = final_records(open_run("r1"))
    allowed = {"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ", "LC_CTYPE"}
    control_env = set(records[("control", "a", 0)].metrics["env"])
    treat_env = set(records[("treat", "a", 0)].metrics["env"])
    assert control_env <= allowed
    assert treat_env - control_env == {"DEBUG"}
    assert not any(name.startswith(("PREMATH_", "AGENTLAB_")) for name in treat_env)


def test_local_executor_memory_cap_is_applied(workdir, clock):
    if not sys.platform.startswith("linux"):
        pytest.skip("prlimit is Linux-only")
    tasks = [
        {"id": "small", "mode": "allocate", "mb": 8},
        {"id": "big", "mode": "allocate", "mb": 512},
    ]
    experiment = make_experiment(workdir / "exp", tasks, runtime={"resources": {"memory_mb": 256}})
    run(experiment, clock, run_id="r1")
    records = {key[1]: record for key, record in final_records(open_run("r1")).items()}
    assert records["small"].outcome == "success"
    assert (records["big"].outcome, records["big"].error_class) == ("error", "harness_exit_nonzero")


def test_our_own_io_failure_stops_the_run_with_a_resume_hint(workdir, clock):
    from premath.errors import IoFailure

    experiment = make_experiment(workdir / "exp", [{"id": "a"}])
    state = create_run(os.fspath(experiment), run_id="r1", now=clock.now())
    state.paths.trials_dir.write_text("a file where the trials folder goes")
    with pytest.raises(IoFailure, match="premath experiment resume r1"):
        execute_run(state, clock=clock, lock_timeout=5.0)
    assert not state.paths.lock.exists()


def test_a_moved_run_folder_resumes_where_it_now_is(workdir, clock):
    experiment = make_experiment(workdir / "exp", [{"id": "a"}])
    create_run(os.fspath(experiment), run_id="r1", now=clock.now())
    (workdir / "moved").mkdir()
    os.rename(workdir / ".premath/runs/r1", workdir / "moved/r1")
    summary = resume_experiment("moved/r1", clock=clock, lock_timeout=5.0)
    assert summary["trials"]["success"] == 1
    assert summary["trajectory_path"] == os.fspath(Path("moved/r1/harness_trajectory.jsonl"))
    assert len(rows(workdir / "moved/r1/harness_trajectory.jsonl")) == 2
    assert not (workdir / ".premath/runs/r1").exists()
