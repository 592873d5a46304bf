"""What an experiment tells the person who ran it: why trials errored, a run where every trial
errored, the report fitted to the terminal, the HTML page it wrote, an unfinished run, the
progress bar's frames, and `resume` keeping the run's `--concurrency`."""

import shutil
import sys
import textwrap
from pathlib import Path

import orjson
import pytest
import yaml

from tests.runner.conftest import make_experiment
from tests.support.terminal import PREMATH, frames, run_in_pty, screen_lines

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "clean_harness"
CANT_OPEN = "can't open file"


@pytest.fixture
def typo(workdir) -> Path:
    """The README's example with `runtime.command` naming `harnes.py` (a typo)."""
    folder = workdir / "clean_harness"
    shutil.copytree(EXAMPLE, folder)
    experiment = folder / "experiment.yaml"
    document = yaml.safe_load(experiment.read_text())
    document["runtime"]["command"] = ["python3", "harnes.py"]
    document["retry"] = {"max_attempts": 1}
    experiment.write_text(yaml.safe_dump(document, sort_keys=False))
    return experiment


def test_a_run_where_every_trial_errored_says_why_and_exits_1(cli_run, typo):
    ran = cli_run("experiment", "run", str(typo), "--run-id", "typo")
    assert ran.exit_code == 1
    assert ran.stderr.startswith("error: every trial ended in error (72 of 72); most common, 72")
    assert CANT_OPEN in ran.stderr
    assert "premath experiment resume typo --rerun-errors" in ran.stderr
    lines = ran.stdout.splitlines()
    assert lines[4] == "  Errors, most common first:"
    assert lines[5].startswith("    72 x harness_exit_nonzero: the harness ended with exit code 2:")
    assert CANT_OPEN in " ".join(lines[5:])
    assert (
        lines[-1]
        == "  Next: fix the cause above, then premath experiment resume typo --rerun-errors"
    )
    document = cli_run("experiment", "resume", "typo", "--json")
    assert document.exit_code == 1  # the run still has no verdict: still an error
    (message,) = document.json["error_messages"]
    assert (message["count"], message["error_class"], message["variants"]) == (
        72,
        "harness_exit_nonzero",
        ["careful", "control", "fast"],
    )
    assert message["message"].startswith("the harness ended with exit code 2: ")
    assert CANT_OPEN in message["message"]
    assert "harnes.py" in message["message"]


def test_the_report_shows_the_most_common_error_messages(cli_run, typo):
    cli_run("experiment", "run", str(typo), "--run-id", "typo")
    report = cli_run("experiment", "report", "typo")
    assert report.exit_code == 0
    text = report.stdout
    assert "no trial was judged: every trial ended in error (why: below)" in text
    assert "most common errors (the harness's first line on stderr):" in text
    assert "  72 x harness_exit_nonzero: the harness ended with exit code 2:" in text
    document = cli_run("experiment", "report", "typo", "--html", "typo.html", "--json").json
    assert document["error_messages"][0]["count"] == 72
    page = Path("typo.html").read_text()
    assert 'id="error-messages"' in page
    assert CANT_OPEN.replace("'", "&#x27;") in page


def test_some_errors_are_listed_without_failing_the_run(cli_run, workdir):
    experiment = make_experiment(
        workdir / "exp",
        [{"id": "a", "mode": "exit3"}, {"id": "b"}, {"id": "c", "mode": "noresult"}],
    )
    ran = cli_run("experiment", "run", str(experiment), "--run-id", "some", "--json")
    assert (ran.exit_code, ran.stderr) == (0, "")
    assert [(m["count"], m["error_class"], m["message"]) for m in ran.json["error_messages"]] == [
        (1, "harness_exit_nonzero", "the harness ended with exit code 3: something broke"),
        (1, "result_missing", "the harness exited 0 but wrote no out/result.json"),
    ]


def test_a_python_traceback_is_named_by_its_exception(cli_run, workdir):
    experiment = make_experiment(
        workdir / "exp", [{"id": "a"}], runtime={"command": [sys.executable, "-c", "1/0"]}
    )
    ran = cli_run("experiment", "run", str(experiment), "--run-id", "tb", "--json")
    assert ran.json["error_messages"][0]["message"] == (
        "the harness ended with exit code 1: ZeroDivisionError: division by zero"
    )


def test_html_says_where_the_page_went(cli_run, workdir):
    experiment = make_experiment(workdir / "exp", [{"id": "a"}])
    cli_run("experiment", "run", str(experiment), "--run-id", "r")
    text = cli_run("experiment", "report", "r", "--html", "pages/r.html")
    assert text.exit_code == 0
    assert text.stdout.rstrip().endswith("HTML report written to pages/r.html")
    assert Path("pages/r.html").is_file()
    document = cli_run("experiment", "report", "r", "--html", "r.html", "--json").json
    assert document["html_path"] == "r.html"
    assert "html_path" not in cli_run("experiment", "report", "r", "--json").json


def test_an_unfinished_run_has_no_finish_time(cli_run, workdir):
    """A run interrupted before its last trial: the report says it is not finished."""
    experiment = make_experiment(workdir / "exp", [{"id": f"t{n}"} for n in range(4)])
    cli_run("experiment", "run", str(experiment), "--run-id", "part")
    trials = workdir / ".premath" / "runs" / "part" / "trials.jsonl"
    rows = trials.read_bytes().splitlines(keepends=True)
    trials.write_bytes(b"".join(rows[:2]))  # as if stopped after two trials
    document = cli_run("experiment", "report", "part", "--json").json
    assert (document["metadata"]["finished_at"], document["trials"]["pending"]) == (None, 2)
    text = cli_run("experiment", "report", "part").stdout
    assert "  finished: not yet (2 trials pending: premath experiment resume part)" in text
    cli_run("experiment", "resume", "part")
    assert cli_run("experiment", "report", "part", "--json").json["metadata"]["finished_at"]


PEAK_HARNESS = textwrap.dedent(
    """
    import json, os, sys, time
    task = json.load(open(sys.argv[-2]))
    running = os.path.join(task["dir"], "running")
    os.makedirs(running, exist_ok=True)
    mine = os.path.join(running, str(os.getpid()))
    open(mine, "w").close()
    # Until three run at once (or long enough to tell that they never will): a loaded machine
    # may start the three processes seconds apart.
    peak, deadline = 0, time.monotonic() + 15
    while peak < 3 and time.monotonic() < deadline:
        peak = max(peak, len(os.listdir(running)))
        time.sleep(0.01)
    os.remove(mine)
    failed = os.path.join(task["dir"], "failed-" + task["id"])
    if not os.path.exists(failed):  # the first attempt errors: resume --rerun-errors runs it
        open(failed, "w").close()
        sys.exit(1)
    json.dump({"outcome": "success", "metrics": {"peak": peak}}, open(sys.argv[-1], "w"))
    """
)


def test_resume_keeps_the_concurrency_given_to_run(cli_run, workdir):
    folder = workdir / "exp"
    tasks = [{"id": f"t{n}", "dir": str(workdir)} for n in range(6)]
    experiment = make_experiment(
        folder, tasks, runtime={"command": [sys.executable, "peak.py"]}, retry={"max_attempts": 1}
    )
    (folder / "peak.py").write_text(PEAK_HARNESS)
    ran = cli_run("experiment", "run", str(experiment), "--run-id", "c", "--concurrency", "3")
    assert ran.exit_code == 1  # every first attempt errors
    resumed = cli_run("experiment", "resume", "c", "--rerun-errors", "--json")
    assert (resumed.exit_code, resumed.json["trials"]["success"]) == (0, 6), resumed.stderr
    trials = (workdir / ".premath/runs/c/trials.jsonl").read_bytes().splitlines()
    rows = [orjson.loads(line) for line in trials]
    peaks = [row["metrics"]["peak"] for row in rows if row["outcome"] == "success"]
    assert max(peaks) == 3  # the experiment says 1; `run` was given 3


def test_the_report_fits_80_columns_in_a_terminal_and_when_piped(cli_run, workdir):
    shutil.copytree(EXAMPLE, workdir / "clean_harness")
    cli_run("experiment", "run", "clean_harness/experiment.yaml", "--run-id", "demo")
    argv = [*PREMATH, "experiment", "report", "demo"]
    code, seen = run_in_pty(argv, columns=80, cwd=workdir)
    assert code == 0
    lines = screen_lines(seen)
    assert max(map(len, lines)) <= 80
    assert any(line.startswith("method: Unit of analysis: the task.") for line in lines)
    piped = cli_run("experiment", "report", "demo").stdout.splitlines()  # not a terminal: 80
    assert max(map(len, piped)) <= 80
    assert [line.rstrip() for line in lines if line.strip()] == [p for p in piped if p.strip()]
    _, wide = run_in_pty(argv, columns=200, cwd=workdir)
    header = next(line for line in screen_lines(wide) if line.startswith("variant  "))
    assert header.rstrip().endswith("objective mean")  # wide enough: one table, whole


def test_the_progress_bar_leaves_no_stray_characters_and_fits_the_terminal(workdir):
    experiment = make_experiment(
        workdir / "exp", [{"id": f"t{n}", "mode": "slow", "seconds": 0.15} for n in range(12)]
    )
    argv = [*PREMATH, "experiment", "run", str(experiment), "--run-id", "p", "--progress"]
    code, seen = run_in_pty(argv, columns=60, cwd=workdir)
    assert code == 0
    drawn = [frame for frame in frames(seen) if frame.startswith("[")]
    assert any("eta" in frame for frame in drawn)  # a longer frame came before the last one
    assert max(len(frame) for frame in drawn) < 60  # never wraps onto a second line
    bar_line = next(line for line in screen_lines(seen) if line.startswith("["))
    assert bar_line.rstrip() == drawn[-1].rstrip()  # what stays is exactly the last frame
    assert "eta" not in bar_line
