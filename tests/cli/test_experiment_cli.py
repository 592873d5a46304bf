"""`premath experiment ...`, `premath run` and `premath schema` through the real exit point."""

import os
import re
import sys
from pathlib import Path

import orjson
import pytest

from tests.runner.conftest import make_experiment
from tests.support.cli import run_premath

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "clean_harness" / "experiment.yaml"


def test_the_example_experiment_runs_to_completion(cli_run):
    result = cli_run("experiment", "run", os.fspath(EXAMPLE), "--run-id", "demo", "--json")
    assert (result.exit_code, result.stderr) == (0, "")
    trials = result.json["trials"]
    assert trials == {
        "scheduled": 72,
        "ran": 72,
        "success": 64,
        "failure": 8,
        "error": 0,
        "pending": 0,
    }
    report = cli_run("experiment", "report", "demo", "--json")
    assert report.exit_code == 0
    variants = {v["variant_id"]: v["pass_rate"] for v in report.json["variants"]}
    assert variants == {"control": 22 / 24, "careful": 1.0, "fast": 0.75}
    # The harness is deterministic: both replications of a task agree, so counting trial pairs
    # would double the evidence (CI [-33.3%, -4.2%], McNemar p 0.125 on 4 discordant pairs).
    # Per task: fast loses arith-07 and arith-11 and ties the other ten.
    _, fast = report.json["comparisons"]
    assert (fast["tasks"], fast["trials"], fast["wins"], fast["losses"]) == (12, 48, 0, 2)
    assert (fast["test"]["b"], fast["test"]["c"], fast["p_value"]) == (2, 0, 0.5)
    diff = fast["success_diff"]
    assert (diff["estimate"], diff["low"], diff["high"]) == (-2 / 12, -5 / 12, 0.0)
    text = cli_run("experiment", "report", "demo").stdout
    # 80 columns (not a terminal): the comparison table comes in two parts
    assert "fast     12     48      0/2/10  exact sign test (McNemar)  0.500  1.000\n" in text
    assert "fast     -16.7% [-41.7%, 0.0%]" in text


def test_run_text_output(cli_run, workdir):
    experiment = make_experiment(workdir / "exp", [{"id": "a"}, {"id": "b", "mode": "fail"}])
    result = cli_run("experiment", "run", os.fspath(experiment))
    assert result.exit_code == 0
    assert result.stdout == (
        "premath experiment run\n"
        "  Run: exp-20260301T100000Z\n"
        "  Folder: .premath/runs/exp-20260301T100000Z\n"
        "  Trials: 2 scheduled, 2 run now; 1 success, 1 failure, 0 error, 0 pending\n"
        "  Next: premath experiment report exp-20260301T100000Z\n"
    )
    resumed = cli_run("experiment", "resume", "exp-20260301T100000Z")
    assert resumed.stdout.splitlines()[0] == "premath experiment resume"
    assert "2 scheduled, 0 run now" in resumed.stdout


def test_validate_reports_the_plan(cli_run, workdir):
    experiment = make_experiment(
        workdir / "exp",
        [{"id": "a"}, {"id": "b"}],
        variants=[{"variant_id": "hot", "args": ["--variant", "hot"]}],
        design={"replications": 3},
    )
    result = cli_run("experiment", "validate", os.fspath(experiment), "--json")
    assert result.exit_code == 0
    document = result.json
    assert (document["variants"], document["tasks"], document["trials"]) == (
        ["control", "hot"],
        2,
        12,
    )
    assert document["digest"].startswith("exp1_")
    assert not (workdir / ".premath").exists()


def test_an_invalid_experiment_names_every_problem(cli_run, workdir):
    experiment = workdir / "experiment.yaml"
    experiment.write_text(
        'version: "1.0"\nexperiment: {id: x, name: y, owner: me}\ndataset: {path: t.jsonl}\n'
        "design: {replications: 1}\nbaseline: {variant_id: control}\n"
        "variant_plan: [{variant_id: a}, {variant_id: a}]\nruntime: {command: []}\n"
    )
    result = cli_run("experiment", "run", os.fspath(experiment), "--json")
    assert result.exit_code == 1
    assert result.json["error"]["code"] == "input_invalid"
    message = result.json["error"]["message"]
    assert "(3 problem(s))" in message
    assert "experiment.owner: unknown field" in message
    assert "runtime.command: command must name a program" in message
    assert "variant id 'a' appears 2 times" in message
    assert result.stderr.startswith("error: ")
    assert not (workdir / ".premath").exists()


def test_a_missing_dataset_is_not_found(cli_run, workdir):
    experiment = make_experiment(workdir / "exp", [{"id": "a"}])
    (workdir / "exp" / "tasks.jsonl").unlink()
    result = cli_run("experiment", "run", os.fspath(experiment), "--json")
    assert (result.exit_code, result.json["error"]["code"]) == (1, "not_found")


def test_an_image_on_the_local_executor_is_refused(cli_run, workdir):
    experiment = make_experiment(
        workdir / "exp", [{"id": "a"}], variants=[{"variant_id": "v", "image": "other:1"}]
    )
    result = cli_run("experiment", "run", os.fspath(experiment))
    assert result.exit_code == 1
    assert "variant_plan[0].image: the local executor" in result.stderr


def test_usage_errors_exit_2(cli_run, workdir):
    experiment = make_experiment(workdir / "exp", [{"id": "a"}])
    assert cli_run("experiment", "run", os.fspath(experiment), "--concurrency", "0").exit_code == 2
    assert cli_run("experiment", "run", os.fspath(experiment), "--executor", "vm").exit_code == 2
    assert cli_run("experiment", "report", "x", "--resamples", "5").exit_code == 2
    repeated = cli_run("experiment", "run", os.fspath(experiment), "--run-id", "a", "--run-id", "b")
    assert repeated.exit_code == 2


def test_report_text_json_and_html(cli_run, workdir):
    experiment = make_experiment(
        workdir / "exp",
        [{"id": "a"}, {"id": "b", "mode": "by_variant", "modes": {"hot": "fail"}}],
        variants=[{"variant_id": "hot", "args": ["--variant", "hot"]}],
    )
    cli_run("experiment", "run", os.fspath(experiment), "--run-id", "r1")
    text = cli_run("experiment", "report", "r1", "--html", "report.html")
    assert text.exit_code == 0
    assert text.stdout.startswith("premath experiment report: Test experiment (exp)\n")
    assert "control (baseline)  2       2        0        0      100.0%" in text.stdout
    page = (workdir / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert page.count("<svg") == 2
    # trial links are relative to the page's folder and lead to the trial folders
    links = re.findall(r'href="([^"]+)"', page)
    assert links[0] == ".premath/runs/r1/trials/000000-control-a-r0/"
    assert len(links) == 4
    assert all((workdir / link).is_dir() for link in links)
    (workdir / "pages").mkdir()
    cli_run("experiment", "report", "r1", "--html", "pages/report.html")
    nested = (workdir / "pages" / "report.html").read_text()
    assert (
        re.findall(r'href="([^"]+)"', nested)[0]
        == "../.premath/runs/r1/trials/000000-control-a-r0/"
    )
    as_json = cli_run("experiment", "report", "r1", "--json", "--seed", "3")
    assert as_json.json["report_kind"] == "premath.experiment.report.v2"
    assert as_json.json["comparisons"][0]["losses"] == 1


def test_report_of_a_run_folder_path(cli_run, workdir):
    experiment = make_experiment(workdir / "exp", [{"id": "a"}])
    cli_run("experiment", "run", os.fspath(experiment), "--run-id", "r1", "--runs-dir", "elsewhere")
    assert cli_run("experiment", "report", "elsewhere/r1", "--json").exit_code == 0
    assert cli_run("experiment", "report", "r1", "--runs-dir", "elsewhere").exit_code == 0
    missing = cli_run("experiment", "report", "r1", "--json")
    assert (missing.exit_code, missing.json["error"]["code"]) == (1, "not_found")


def test_schema_command(cli_run):
    result = cli_run("schema", "experiment")
    assert result.exit_code == 0
    schema = orjson.loads(result.stdout)
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == {
        "version",
        "experiment",
        "dataset",
        "design",
        "baseline",
        "runtime",
    }
    assert schema["properties"]["concurrency"]["description"] == "Trials run at once."
    result = cli_run("schema", "trial-result", "--json")
    assert orjson.loads(result.stdout)["required"] == ["outcome"]
    assert cli_run("schema", "nope").exit_code == 2


def _harness(workdir: Path) -> str:
    make_experiment(workdir / "exp", [])
    return f"{sys.executable} {workdir / 'exp' / 'harness.py'}"


def test_single_run_success_and_failure_exit_codes(cli_run, workdir):
    command = _harness(workdir)
    (workdir / "ok.json").write_text('{"mode": "ok", "score": 0.25}')
    (workdir / "bad.json").write_text('{"mode": "exit3"}')
    ok = cli_run(
        "run", "--command", command, "--arg", "--variant", "--arg", "x", "ok.json", "--json"
    )
    assert ok.exit_code == 0
    assert (ok.json["outcome"], ok.json["objective"]) == (
        "success",
        {"name": "score", "value": 0.25},
    )
    assert ok.json["metrics"]["argv"][:2] == ["--variant", "x"]
    assert ok.json["trial_dir"] == ".premath/runs/single-20260301T100000Z"
    bad = cli_run("run", "--command", command, "bad.json", "--out", "trial")
    assert bad.exit_code == 1
    assert "Outcome: error (harness_exit_nonzero)" in bad.stdout
    assert (workdir / "trial" / "stderr.txt").read_text() == "something broke\n"


def test_single_run_bad_input(cli_run, workdir):
    command = _harness(workdir)
    (workdir / "t.json").write_text("{}")
    (workdir / "notjson.json").write_text("{")
    cases = [
        (("--image", "x", "t.json"), "input_invalid"),
        (("missing.json",), "not_found"),
        (("notjson.json",), "input_invalid"),
        (("--env", "PREMATH_X=1", "t.json"), "input_invalid"),
        (("--env", "novalue", "t.json"), "input_invalid"),
    ]
    for args, code in cases:
        result = cli_run("run", "--command", command, *args, "--json")
        assert (result.exit_code, result.json["error"]["code"]) == (1, code), args
    assert cli_run("run", "t.json").exit_code == 2


def test_a_real_process_keeps_stdout_to_one_document(tmp_path):
    experiment = make_experiment(
        tmp_path / "exp",
        [{"id": "a", "mode": "spew", "mb": 2}, {"id": "b", "mode": "exit3"}],
    )
    result = run_premath("experiment", "run", os.fspath(experiment), "--json", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stderr == b""
    document = orjson.loads(result.stdout)
    assert document["trials"]["error"] == 1


def test_help_of_the_new_commands_stays_off_heavy_imports(tmp_path):
    import subprocess

    probe = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from premath.cli import cli\n"
        "for args in (['experiment', '--help'], ['run', '--help'], ['schema', '--help']):\n"
        "    assert CliRunner().invoke(cli, args).exit_code == 0, args\n"
        "heavy = ('pydantic', 'yaml', 'premath.runner.runs')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, check=True, timeout=60
    )
    assert result.stdout == b"[]\n"


def test_fail_on_error_exits_1_when_trials_end_in_error(tmp_path):
    """A real process: the gate's exit status, stderr reason and the summary on stdout."""
    experiment = make_experiment(
        tmp_path / "exp",
        [{"id": f"t{i}", "mode": "exit3" if i < 2 else "ok"} for i in range(10)],
    )
    path = os.fspath(experiment)
    plain = run_premath("experiment", "run", path, "--run-id", "plain", "--json", cwd=tmp_path)
    assert plain.returncode == 0  # errors alone do not fail a run
    gated = run_premath(
        "experiment", "run", path, "--run-id", "gated", "--fail-on-error", "--json", cwd=tmp_path
    )
    assert gated.returncode == 1
    assert orjson.loads(gated.stdout)["trials"]["error"] == 2  # the summary is still printed
    assert gated.stderr.decode().startswith(
        "error: 2 of 10 final trials ended in error (none allowed); see the error classes with "
        "`premath experiment report gated`"
    )
    rates = {
        rate: run_premath(
            "experiment", "run", path, "--fail-on-error-rate", rate, "--run-id", f"r{i}",
            cwd=tmp_path,
        )
        for i, rate in enumerate(["0.1", "0.2", "0.5"])
    }  # fmt: skip
    assert {rate: result.returncode for rate, result in rates.items()} == {
        "0.1": 1,
        "0.2": 0,  # 2 of 10 is not above 0.2
        "0.5": 0,
    }
    assert b"(limit 0.1)" in rates["0.1"].stderr
    assert rates["0.2"].stderr == b""
    resumed = run_premath("experiment", "resume", "gated", "--fail-on-error", cwd=tmp_path)
    assert resumed.returncode == 1
    bad = run_premath("experiment", "run", path, "--fail-on-error-rate", "1.5", cwd=tmp_path)
    assert bad.returncode == 2


def test_fail_on_error_passes_a_clean_run(cli_run, workdir):
    experiment = make_experiment(workdir / "exp", [{"id": "a"}, {"id": "b", "mode": "fail"}])
    result = cli_run("experiment", "run", os.fspath(experiment), "--fail-on-error", "--json")
    assert (result.exit_code, result.stderr) == (0, "")  # failures are not errors


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("run", "--command", "true", "dir"), "dir is a folder; pass the task's JSON file"),
        (("bench", "run", "--task", "dir", "--command", "true"), "is a folder; pass the JSON"),
        (("experiment", "validate", "dir"), "dir is a folder; pass the experiment.yaml file"),
    ],
)
def test_a_folder_where_a_file_is_wanted_says_so(cli_run, workdir, argv, message):
    (workdir / "dir").mkdir()
    result = cli_run(*argv, "--json")
    assert result.exit_code == 1
    assert message in result.json["error"]["message"]
    assert "Is a directory" not in result.stderr
