"""`premath bench tool` and `premath bench record`: the harness's calls into a live run."""

import orjson
import pytest

from premath.bench.paths import BenchRunPaths
from premath.bench.policy import policy_digest
from premath.bench.run import create_run_folder
from premath.store.atomic import write_atomic
from premath.store.jsonl import parsed_rows


@pytest.fixture
def live(workdir):
    """A run folder as `bench run` leaves it while the harness runs: events and policy."""
    paths = create_run_folder(workdir / "run")
    policy = orjson.dumps({"version": 1, "deny": [{"argv_prefix": ["rm"], "reason": "no deletes"}]})
    write_atomic(paths.policy, policy)
    started = {"kind": "run.started", "at": "2026-03-01T10:00:00.000Z"}
    paths.events.write_bytes(
        orjson.dumps({**started, "policy_digest": policy_digest(policy)}) + b"\n"
    )
    return paths


def kinds(paths: BenchRunPaths) -> list[str]:
    return [event["kind"] for event in parsed_rows(paths.events)]


def test_tool_runs_and_records_call_and_result(cli_run, live):
    result = cli_run("bench", "tool", "--run-dir", "run", "--json", "--", "echo", "hi")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.json == {
        "call_id": "call_1",
        "status": "ok",
        "exit_code": 0,
        "stdout": "hi\n",
        "stderr": "",
        "truncated": False,
    }
    events = list(parsed_rows(live.events))
    assert [e["kind"] for e in events] == ["run.started", "tool.call", "tool.result"]
    assert events[1]["argv"] == ["echo", "hi"]
    assert events[2]["output"] == "hi\n"
    assert live.tool_output("call_1", "stdout").read_text() == "hi\n"


def test_tool_text_mode_prints_the_output(cli_run, live):
    result = cli_run("bench", "tool", "--run-dir", "run", "--", "printf", "a\\nb\\n")
    assert (result.exit_code, result.stdout) == (0, "a\nb\n")


def test_call_ids_count_up(cli_run, live):
    first = cli_run("bench", "tool", "--run-dir", "run", "--json", "--", "true")
    second = cli_run("bench", "tool", "--run-dir", "run", "--json", "--", "true")
    own = cli_run("bench", "tool", "--run-dir", "run", "--call-id", "mine", "--json", "--", "true")
    assert [r.json["call_id"] for r in (first, second, own)] == ["call_1", "call_2", "mine"]


def test_denied_command_is_recorded_and_not_run(cli_run, live, workdir):
    (workdir / "precious").write_text("x")
    result = cli_run("bench", "tool", "--run-dir", "run", "--json", "--", "/bin/rm", "precious")
    assert result.exit_code == 1
    assert result.json["error"]["code"] == "policy_denied"
    assert result.json["error"]["message"] == (
        "call_1: command refused by deny[0] argv_prefix ['rm'] (no deletes); it was not run"
    )
    assert (workdir / "precious").read_text() == "x"
    assert kinds(live) == ["run.started", "tool.call", "tool.denied"]
    assert not live.tool_output("call_1", "stdout").exists()


def test_failing_command_exits_1_with_its_status(cli_run, live):
    result = cli_run("bench", "tool", "--run-dir", "run", "--json", "--", "sh", "-c", "exit 4")
    assert result.exit_code == 1
    assert (result.json["status"], result.json["exit_code"]) == ("exit_nonzero", 4)
    assert list(parsed_rows(live.events))[-1]["output"] == "[exit code 4]"


def test_tool_needs_a_live_run(cli_run, workdir, live):
    missing = cli_run("bench", "tool", "--run-dir", "elsewhere", "--json", "--", "true")
    assert (missing.exit_code, missing.json["error"]["code"]) == (1, "not_found")
    write_atomic(live.summary, b"{}\n")
    finished = cli_run("bench", "tool", "--run-dir", "run", "--json", "--", "true")
    assert (finished.exit_code, finished.json["error"]["code"]) == (1, "conflict")


def test_record_appends_a_row(cli_run, live):
    row = '{"source": "agent", "message": "hi", "metrics": {"prompt_tokens": 3}}'
    result = cli_run("bench", "record", "--run-dir", "run", "--row", row, "--json")
    assert (result.exit_code, result.json["source"]) == (0, "agent")
    event = list(parsed_rows(live.events))[-1]
    assert event["row"] == {"source": "agent", "message": "hi", "metrics": {"prompt_tokens": 3}}


@pytest.mark.parametrize(
    ("row", "fragment"),
    [
        ("{oops", "--row is not valid JSON"),
        ('{"source": "user", "message": "x", "metrics": {}}', "only allowed on agent rows"),
        ('{"source": "agent", "colour": "red"}', "colour: Extra inputs are not permitted"),
        ('{"source": "agent", "metrics": {"prompt_tokens": true}}', "prompt_tokens"),
        ('{"source": "agent", "metrics": {"prompt_tokens": -1}}', "greater than or equal to 0"),
        ('{"source": "agent", "timestamp": "yesterday"}', "timestamp is not ISO 8601"),
        (
            '{"source": "agent", "tool_calls": [{"tool_call_id": "a", "function_name": "f", '
            '"arguments": {}}], "results": [{"source_call_id": "b", "content": ""}]}',
            "names no tool call of this row",
        ),
    ],
)
def test_record_refuses_rows_that_would_break_atif(cli_run, live, row, fragment):
    result = cli_run("bench", "record", "--run-dir", "run", "--row", row, "--json")
    assert (result.exit_code, result.json["error"]["code"]) == (1, "input_invalid")
    assert fragment in result.json["error"]["message"]
    assert kinds(live) == ["run.started"]


def test_concurrent_calls_get_distinct_ids_and_whole_rows(live, workdir):
    """Real processes started together: every call gets its own id, every row parses."""
    import subprocess
    import sys

    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "premath",
                "bench",
                "tool",
                "--run-dir",
                "run",
                "--json",
                "--",
                "echo",
                str(n),
            ],
            cwd=workdir,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for n in range(6)
    ]
    outputs = [orjson.loads(proc.communicate(timeout=60)[0]) for proc in procs]
    assert sorted(o["call_id"] for o in outputs) == [f"call_{n}" for n in range(1, 7)]
    events = list(parsed_rows(live.events))
    assert len(live.events.read_bytes().splitlines()) == len(events) == 13
    results = {e["call_id"]: e["output"] for e in events if e["kind"] == "tool.result"}
    assert sorted(results.values()) == [f"{n}\n" for n in range(6)]
    assert sorted(p.name for p in live.raw.iterdir()) == [
        "events.jsonl",
        "in",
        "out",
        "policy.json",
        "tools",
    ]


def test_tool_calls_stay_off_pydantic(live, workdir):
    """One `bench tool` per agent command: its import path must stay lean (start-up budget)."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from premath.cli import cli\n"
        "try:\n"
        "    cli.main(['bench', 'tool', '--run-dir', 'run', '--json', '--', 'true'])\n"
        "except SystemExit as done:\n"
        "    assert done.code == 0, done.code\n"
        "sys.stderr.write(str(sorted(m for m in ('pydantic', 'yaml') "
        "if m in sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stderr.strip().splitlines()[-1] == "[]", done.stderr


def test_a_rewritten_policy_is_refused_and_nothing_runs(cli_run, live, workdir):
    """The harness may write raw/policy.json; the run pinned its digest at start."""
    (workdir / "precious").write_text("x")
    write_atomic(live.policy, orjson.dumps({"version": 1, "deny": []}))
    result = cli_run("bench", "tool", "--run-dir", "run", "--json", "--", "rm", "precious")
    assert result.exit_code == 1
    assert result.json["error"]["code"] == "policy_denied"
    assert "is not the one the run started with" in result.json["error"]["message"]
    assert (workdir / "precious").exists()
    assert kinds(live) == ["run.started"]


def test_a_missing_tools_folder_is_created(cli_run, live):
    live.tools_dir.rmdir()
    result = cli_run("bench", "tool", "--run-dir", "run", "--json", "--", "echo", "hi")
    assert (result.exit_code, result.json["stdout"]) == (0, "hi\n")


def test_respelled_deny_commands_are_refused_through_the_cli(cli_run, live, workdir):
    (workdir / "precious").write_text("x")
    for argv in (["env", "rm", "precious"], ["sh", "-c", "rm precious"], ["nice", "rm", "x"]):
        result = cli_run("bench", "tool", "--run-dir", "run", "--json", "--", *argv)
        assert result.json["error"]["code"] == "policy_denied", argv
    assert (workdir / "precious").exists()
