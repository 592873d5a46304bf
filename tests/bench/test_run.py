"""`premath bench run`: artifacts, failure semantics and bad input, through the real exit point."""

import os

import orjson
import pytest

from premath.atif.validate import validate_file
from tests.bench.conftest import EXAMPLE_POLICY, SAMPLE_TASK, sample_command

ARTIFACTS = ("raw", "atif/trajectory.json", "summary.json", "run-metadata.json")


def load(path):
    return orjson.loads(path.read_bytes())


@pytest.fixture
def workspace(workdir):
    folder = workdir / "workspace"
    folder.mkdir()
    return folder


def bench(cli_run, *args):
    return cli_run("bench", "run", *args)


def sample_run(cli_run, *args):
    """The sample task with the sample harness under the example policy."""
    task = ("--task", str(SAMPLE_TASK), "--command", sample_command())
    return bench(cli_run, *task, "--policy", str(EXAMPLE_POLICY), *args)


def test_sample_run_leaves_four_valid_artifacts(cli_run, workdir, workspace):
    result = sample_run(
        cli_run,
        "--cwd",
        str(workspace),
        "--run-dir",
        "runs/one",
        "--model-provider",
        "none",
        "--model-name",
        "scripted",
        "--json",
    )
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.json == {
        "status": "succeeded",
        "exit_code": 0,
        "failure_class": None,
        "failure_message": None,
        "run_dir": "runs/one",
        "artifacts": {
            "raw": "runs/one/raw",
            "trajectory": "runs/one/atif/trajectory.json",
            "summary": "runs/one/summary.json",
            "metadata": "runs/one/run-metadata.json",
        },
    }
    run = workdir / "runs" / "one"
    assert all((run / name).exists() for name in ARTIFACTS)
    assert validate_file(run / "atif" / "trajectory.json").valid
    summary = load(run / "summary.json")
    assert summary["status"] == "succeeded"
    assert summary["outcome"] == "success"
    assert summary["approval_mode"] == "full-access"
    assert summary["usage"] == {
        "prompt_tokens": 370,
        "completion_tokens": 39,
        "cached_tokens": 0,
        "cost_usd": 0.0,
    }
    assert summary["model"] == {"provider": "none", "name": "scripted"}
    assert summary["tools"] == {"calls": 4, "denied": 1}
    assert summary["trajectory"]["valid"] is True
    metadata = load(run / "run-metadata.json")
    assert list(metadata) == [
        "timestamp_utc",
        "premath_commit_sha",
        "premath_version",
        "harness",
        "dataset_id",
        "task_id",
        "model_provider",
        "model_name",
        "approval_mode",
        "sandbox_backend",
        "atif_schema_version",
        "exit_status",
        "session_id",
        "pass_env",
        "pass_env_missing",
        "policy_digest",
    ]
    assert metadata["timestamp_utc"] == "2026-03-01T10:00:00Z"
    assert metadata["dataset_id"] == "premath-sample@1"
    assert metadata["task_id"] == "hello-file"
    assert metadata["approval_mode"] == "full-access"
    assert metadata["sandbox_backend"] == "local"
    assert metadata["atif_schema_version"] == "ATIF-v1.8"
    assert metadata["session_id"] == run.name
    assert (metadata["pass_env"], metadata["pass_env_missing"]) == ([], [])
    assert metadata["exit_status"] == 0
    assert metadata["harness"]["version"] == "sample-0.1.0"
    assert metadata["harness"]["command"][-1].endswith("harness.py")
    # The denied command was refused and recorded, and never ran: hello.txt is still there,
    # in the work area the sample task names (`work_dir`), not in the harness's folder.
    assert (run / "work" / "hello.txt").read_text() == "hello\n"
    assert list(workspace.iterdir()) == []
    trajectory = load(run / "atif" / "trajectory.json")
    denied = trajectory["steps"][-2]
    assert denied["tool_calls"][0]["arguments"] == {"argv": ["rm", "-rf", "hello.txt"]}
    assert denied["observation"]["results"][0]["content"].startswith("denied by policy: deny[0]")
    assert trajectory["final_metrics"]["total_steps"] == len(trajectory["steps"])


def test_text_mode_ends_with_one_completion_line(cli_run, harness):
    result = bench(cli_run, "--instruction", "do it", "--command", harness("ok"), "--run-dir", "r")
    assert result.exit_code == 0
    assert result.stdout == (
        "bench run succeeded (exit 0): run_dir=r trajectory=r/atif/trajectory.json "
        "summary=r/summary.json metadata=r/run-metadata.json raw=r/raw\n"
    )


@pytest.mark.parametrize(
    ("name", "failure_class", "extra_args"),
    [
        ("crash", "harness_exit_nonzero", ()),
        ("no_result", "result_missing", ()),
        ("bad_result", "result_invalid", ()),
        ("reports_error", "harness_error", ()),
        ("sleeps", "timeout", ("--timeout", "0.5")),
        ("cached_tokens", "atif_invalid", ("--atif-schema-version", "ATIF-v1.0")),
    ],
)
def test_failures_exit_1_and_keep_artifacts(
    cli_run, workdir, harness, name, failure_class, extra_args
):
    result = bench(
        cli_run,
        "--instruction",
        "x",
        "--command",
        harness(name),
        "--run-dir",
        "r",
        "--json",
        *extra_args,
    )
    assert result.exit_code == 1
    assert result.json["status"] == "failed"
    assert result.json["failure_class"] == failure_class
    run = workdir / "r"
    assert all((run / name).exists() for name in ARTIFACTS)
    summary = load(run / "summary.json")
    assert (summary["status"], summary["failure_class"]) == ("failed", failure_class)
    assert load(run / "run-metadata.json")["exit_status"] == 1
    assert (run / "raw" / "events.jsonl").stat().st_size > 0


def test_crash_keeps_harness_stderr(cli_run, workdir, harness):
    result = bench(cli_run, "--instruction", "x", "--command", harness("crash"), "--run-dir", "r")
    assert "exit code 3: boom" in result.stdout
    assert (workdir / "r" / "raw" / "harness.stderr").read_text() == "boom\n"


def test_pinned_version_too_low_names_the_feature(cli_run, workdir, harness):
    bench(
        cli_run,
        "--instruction",
        "x",
        "--command",
        harness("cached_tokens"),
        "--run-dir",
        "r",
        "--atif-schema-version",
        "ATIF-v1.0",
    )
    summary = load(workdir / "r" / "summary.json")
    assert summary["trajectory"]["errors"] == [
        {
            "location": "schema_version",
            "message": "ATIF schema version ATIF-v1.0 cannot carry metrics.cached_tokens as a "
            "subset of prompt_tokens (introduced in ATIF-v1.2); configure ATIF-v1.2 or later",
        }
    ]
    assert load(workdir / "r" / "run-metadata.json")["atif_schema_version"] == "ATIF-v1.0"


def test_denied_harness_command_is_not_run(cli_run, workdir, tmp_path):
    policy = tmp_path / "policy.json"
    policy.write_text('{"deny": [{"glob": "*touch*"}]}')
    result = bench(
        cli_run,
        "--instruction",
        "x",
        "--command",
        "touch marker",
        "--policy",
        str(policy),
        "--run-dir",
        "r",
        "--json",
    )
    assert (result.exit_code, result.json["failure_class"]) == (1, "command_denied")
    assert not (workdir / "marker").exists()
    assert load(workdir / "r" / "summary.json")["harness"]["status"] == "not_started"


def test_missing_program_is_spawn_failed(cli_run):
    result = bench(
        cli_run,
        "--instruction",
        "x",
        "--command",
        "no-such-harness-xyz",
        "--run-dir",
        "r",
        "--json",
    )
    assert (result.exit_code, result.json["failure_class"]) == (1, "spawn_failed")


def test_existing_run_dir_is_refused_and_untouched(cli_run, workdir, harness):
    (workdir / "r").mkdir()
    (workdir / "r" / "keep.txt").write_text("mine")
    result = bench(
        cli_run, "--instruction", "x", "--command", harness("ok"), "--run-dir", "r", "--json"
    )
    assert result.exit_code == 1
    assert result.json["error"]["code"] == "conflict"
    assert "already exists" in result.stderr
    assert os.listdir(workdir / "r") == ["keep.txt"]


def test_retry_without_run_dir_gets_a_new_folder(cli_run, workdir, harness):
    first = bench(cli_run, "--instruction", "x", "--command", harness("crash"), "--json")
    second = bench(cli_run, "--instruction", "x", "--command", harness("ok"), "--json")
    assert first.json["run_dir"] != second.json["run_dir"]
    assert first.json["run_dir"].startswith(".premath/bench/runs/bench-20260301T100000Z-")
    assert load(workdir / first.json["run_dir"] / "summary.json")["status"] == "failed"
    assert load(workdir / second.json["run_dir"] / "summary.json")["status"] == "succeeded"


@pytest.mark.parametrize(
    ("content", "code", "exit_code", "fragment"),
    [
        ("{not json", "input_invalid", 1, "is not valid JSON"),
        ("[1, 2]", "input_invalid", 1, "must be a JSON object"),
        ('{"instruction": "  "}', "input_invalid", 1, "instruction is empty"),
        ('{"task_id": "t"}', "input_invalid", 1, "instruction: Field required"),
    ],
)
def test_bad_task_file(cli_run, workdir, harness, content, code, exit_code, fragment):
    (workdir / "task.json").write_text(content)
    result = bench(cli_run, "--task", "task.json", "--command", harness("ok"), "--json")
    assert (result.exit_code, result.json["error"]["code"]) == (exit_code, code)
    assert fragment in result.json["error"]["message"]
    assert not (workdir / ".premath").exists()


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--instruction", ""), "--instruction is empty"),
        (("--instruction", "x", "--task", "t.json"), "exactly one of --task"),
        ((), "exactly one of --task"),
    ],
)
def test_instruction_usage_errors(cli_run, workdir, harness, args, fragment):
    result = bench(cli_run, *args, "--command", harness("ok"), "--json")
    assert (result.exit_code, result.json["error"]["code"]) == (2, "usage_error")
    assert fragment in result.json["error"]["message"]
    assert not (workdir / ".premath").exists()


@pytest.mark.parametrize(
    ("policy", "fragment"),
    [
        ('{"deny": [{"argv_prefix": []}]}', "deny[0]: 'argv_prefix' must be a non-empty list"),
        ('{"deny": [{"glob": "x", "argv_prefix": ["rm"]}]}', "exactly one of"),
        ('{"deny": [{"pattern": "rm"}]}', "deny[0].pattern: Extra inputs are not permitted"),
        ('{"deny": "rm"}', "deny: Input should be a valid list"),
        ("[]", "must be a JSON object"),
        ("deny: rm", "is not valid JSON"),
    ],
)
def test_malformed_deny_rules(cli_run, workdir, harness, policy, fragment):
    (workdir / "policy.json").write_text(policy)
    result = bench(
        cli_run,
        "--instruction",
        "x",
        "--command",
        harness("ok"),
        "--policy",
        "policy.json",
        "--json",
    )
    assert (result.exit_code, result.json["error"]["code"]) == (1, "input_invalid")
    assert fragment in result.json["error"]["message"]
    assert not (workdir / ".premath").exists()


def test_unknown_atif_version_is_refused_before_running(cli_run, workdir, harness):
    result = bench(
        cli_run,
        "--instruction",
        "x",
        "--command",
        harness("ok"),
        "--atif-schema-version",
        "ATIF-v9.9",
        "--json",
    )
    assert (result.exit_code, result.json["error"]["code"]) == (1, "input_invalid")
    assert not (workdir / ".premath").exists()


def test_unsplittable_command_is_a_usage_error(cli_run):
    result = bench(cli_run, "--instruction", "x", "--command", "python 'open", "--json")
    assert (result.exit_code, result.json["error"]["code"]) == (2, "usage_error")


def test_cwd_must_be_a_folder(cli_run, workdir, harness):
    result = bench(
        cli_run, "--instruction", "x", "--command", harness("ok"), "--cwd", "nope", "--json"
    )
    assert (result.exit_code, result.json["error"]["code"]) == (1, "input_invalid")
    assert not (workdir / ".premath").exists()


def test_harness_runs_in_cwd_with_only_allowlisted_and_passed_env(
    cli_run, workdir, tmp_path, monkeypatch
):
    script = tmp_path / "env_harness.py"
    script.write_text(
        "import json, os, sys\n"
        "open(sys.argv[2], 'w').write(json.dumps({'outcome': 'success'}))\n"
        "open('seen.json', 'w').write(json.dumps(sorted(os.environ)))\n"
    )
    monkeypatch.setenv("BENCH_SECRET", "s")
    monkeypatch.setenv("BENCH_KEY", "k")
    (workdir / "ws").mkdir()
    result = bench(
        cli_run,
        "--instruction",
        "x",
        "--command",
        f"python3 {script}",
        "--cwd",
        "ws",
        "--pass-env",
        "BENCH_KEY",
        "--pass-env",
        "BENCH_UNSET",
        "--run-dir",
        "r",
    )
    assert result.exit_code == 0, result.stdout
    seen = orjson.loads((workdir / "ws" / "seen.json").read_bytes())
    assert "BENCH_KEY" in seen
    assert "BENCH_SECRET" not in seen
    assert not [name for name in seen if name.startswith("PREMATH_")]
    # A listed name that is not set is warned about and recorded, never skipped silently.
    assert result.stderr == (
        "warning: --pass-env BENCH_UNSET is not set; the harness runs without it "
        "(run-metadata.json pass_env_missing lists it)\n"
    )
    metadata = load(workdir / "r" / "run-metadata.json")
    assert (metadata["pass_env"], metadata["pass_env_missing"]) == (
        ["BENCH_KEY", "BENCH_UNSET"],
        ["BENCH_UNSET"],
    )


def test_rows_left_in_out_trajectory_jsonl_become_steps(cli_run, workdir, harness):
    result = bench(
        cli_run, "--instruction", "x", "--command", harness("rows_file"), "--run-dir", "r", "--json"
    )
    assert result.exit_code == 0, result.json
    trajectory = load(workdir / "r" / "atif" / "trajectory.json")
    assert [s["message"] for s in trajectory["steps"]] == ["x", "native 1", "native 2"]
    assert trajectory["steps"][2]["observation"]["results"] == [
        {"source_call_id": "n1", "content": "a"}
    ]
    assert trajectory["notes"] == "premath skipped 2 event(s) it could not use"
    assert trajectory["final_metrics"]["total_prompt_tokens"] == 4


def test_pass_env_refuses_premath_names_before_anything_runs(cli_run, workdir, harness):
    result = bench(
        cli_run, "--instruction", "x", "--command", harness("ok"),
        "--pass-env", "PREMATH_LOCK_TIMEOUT_SECONDS", "--json",
    )  # fmt: skip
    assert (result.exit_code, result.json["error"]["code"]) == (2, "usage_error")
    assert "PREMATH_* and AGENTLAB_* are never passed on" in result.json["error"]["message"]
    assert not (workdir / ".premath").exists()


def test_the_readme_s_sample_run_leaves_the_current_folder_alone_and_validates_by_folder(
    cli_run, workdir
):
    """The README's command, without --cwd: the sample harness works in the run's work area,
    and `atif validate` takes the run folder as `atif export` does."""
    result = sample_run(cli_run, "--run-dir", "bench-run", "--json")
    assert result.exit_code == 0, result.stderr
    assert sorted(path.name for path in workdir.iterdir()) == ["bench-run"]
    assert (workdir / "bench-run" / "work" / "hello.txt").read_text() == "hello\n"
    validated = cli_run("atif", "validate", "bench-run", "--json")
    assert (validated.exit_code, validated.json["valid"]) == (0, True)
    assert validated.json["files"][0]["path"] == "bench-run/atif/trajectory.json"
    assert (
        cli_run("atif", "validate", "bench-run").stdout == "valid: bench-run/atif/trajectory.json\n"
    )
    empty = workdir / "empty"
    empty.mkdir()
    refused = cli_run("atif", "validate", "empty", "--json")
    assert refused.exit_code == 1
    assert refused.json["files"][0]["errors"][0]["message"] == (
        "empty is a folder without atif/trajectory.json: give a trajectory file or a bench run "
        "folder"
    )
