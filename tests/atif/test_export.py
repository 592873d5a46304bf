"""The exporter's mapping, its schema-version choice, and `premath atif export`."""

import orjson
import pytest

from premath.atif.export import (
    ExportContext,
    choose_schema_version,
    export_trajectory,
    required_schema_version,
)
from premath.bench.events import append_event
from tests.conftest import T0

AT = "2026-03-01T10:00:00.000Z"
CONTEXT = ExportContext("run-1", "premath", "0.1.0", "gpt-x")


def ev(kind, **fields):
    return {"kind": kind, "at": AT, **fields}


def test_a_turn_with_two_calls_is_one_step_with_linked_results():
    document = export_trajectory(
        [
            ev("task.instruction", text="List /app"),
            ev(
                "harness.row",
                row={
                    "source": "agent",
                    "message": "Looking.",
                    "metrics": {"prompt_tokens": 10, "completion_tokens": 2},
                },
            ),
            ev("tool.call", call_id="call_1", argv=["ls"]),
            ev("tool.call", call_id="call_2", argv=["pwd"]),
            ev("tool.result", call_id="call_2", output="/app\n", status="ok", exit_code=0),
            ev("tool.result", call_id="call_1", output="main.py\n", status="ok", exit_code=0),
            ev(
                "harness.row",
                row={
                    "source": "agent",
                    "message": "Done.",
                    "metrics": {"prompt_tokens": 20, "completion_tokens": 3},
                },
            ),
        ],
        CONTEXT,
    ).document
    assert document["schema_version"] == "ATIF-v1.8"
    assert document["session_id"] == "run-1"
    assert document["agent"] == {"name": "premath", "version": "0.1.0", "model_name": "gpt-x"}
    assert [s["source"] for s in document["steps"]] == ["user", "agent", "agent"]
    turn = document["steps"][1]
    assert [c["tool_call_id"] for c in turn["tool_calls"]] == ["call_1", "call_2"]
    assert turn["tool_calls"][0]["arguments"] == {"argv": ["ls"]}
    ok = {"tool_status": {"status": "ok", "exit_code": 0}}
    assert turn["observation"]["results"] == [
        {"source_call_id": "call_2", "content": "/app\n", "extra": ok},
        {"source_call_id": "call_1", "content": "main.py\n", "extra": ok},
    ]
    assert document["final_metrics"] == {
        "total_prompt_tokens": 30,
        "total_completion_tokens": 5,
        "total_steps": 3,
    }
    assert "notes" not in document


def test_a_call_with_a_message_opens_its_own_step():
    steps = export_trajectory(
        [
            ev("task.instruction", text="x"),
            ev("tool.call", call_id="a", argv=["ls"]),
            ev("tool.call", call_id="b", argv=["rm", "x"], message="Clean up."),
            ev("tool.denied", call_id="b", status="denied", rule="deny[0] argv_prefix ['rm']"),
        ],
        CONTEXT,
    ).document["steps"]
    assert [(s["source"], s["message"]) for s in steps] == [
        ("user", "x"),
        ("agent", ""),
        ("agent", "Clean up."),
    ]
    assert steps[2]["observation"]["results"][0]["content"] == (
        "denied by policy: deny[0] argv_prefix ['rm']; the command was not run"
    )
    assert steps[2]["extra"] == {"tool_status": {"b": {"status": "denied", "exit_code": None}}}
    assert "observation" not in steps[1]


def test_unusable_events_are_skipped_and_counted():
    export = export_trajectory(
        [
            "junk",
            ev("task.instruction", text="x"),
            ev("tool.result", call_id="never-called", output="?"),
            ev("tool.call", call_id="c", argv="ls"),
            ev("harness.row", row={"source": "user", "metrics": {}}),
            ev("run.finished", status="succeeded"),
        ],
        CONTEXT,
    )
    assert export.skipped_events == 4
    assert export.document["notes"] == "premath skipped 4 event(s) it could not use"
    assert len(export.document["steps"]) == 1


def test_no_events_still_exports_one_step():
    document = export_trajectory([], CONTEXT).document
    assert document["steps"] == [
        {"step_id": 1, "source": "system", "message": "no events were recorded for this run"}
    ]


def test_bad_event_time_drops_only_the_timestamp():
    step = export_trajectory(
        [{"kind": "task.instruction", "at": "noon", "text": "x"}], CONTEXT
    ).document["steps"][0]
    assert "timestamp" not in step


@pytest.mark.parametrize(
    ("document", "version"),
    [
        ({"steps": [{"source": "user"}]}, "ATIF-v1.0"),
        ({"steps": [{"source": "agent", "metrics": {"cached_tokens": 1}}]}, "ATIF-v1.2"),
        ({"steps": [{"source": "system", "observation": {"results": []}}]}, "ATIF-v1.2"),
        ({"agent": {"tool_definitions": []}, "steps": []}, "ATIF-v1.5"),
        ({"steps": [{"source": "user", "message": [{"type": "text", "text": "x"}]}]}, "ATIF-v1.6"),
        ({"steps": [{"source": "agent", "llm_call_count": 1}]}, "ATIF-v1.7"),
        ({"steps": [{"source": "user", "message": [{"type": "audio"}]}]}, "ATIF-v1.8"),
    ],
)
def test_required_schema_version(document, version):
    assert required_schema_version(document)[0] == version


def test_schema_version_choice():
    plain = {"steps": [{"source": "user"}]}
    assert choose_schema_version(plain, None) == ("ATIF-v1.8", None)
    assert choose_schema_version(plain, "ATIF-v1.0") == ("ATIF-v1.0", None)
    assert choose_schema_version(plain, "ATIF-v1.8") == ("ATIF-v1.8", None)
    multimodal = {"steps": [{"source": "user", "message": [{"type": "text", "text": "x"}]}]}
    assert choose_schema_version(multimodal, None) == ("ATIF-v1.8", None)
    version, problem = choose_schema_version(multimodal, "ATIF-v1.5")
    assert version == "ATIF-v1.5"
    assert problem == (
        "ATIF schema version ATIF-v1.5 cannot carry multimodal content parts (introduced in "
        "ATIF-v1.6); configure ATIF-v1.6 or later"
    )


@pytest.fixture
def run_folder(workdir):
    events = workdir / "run" / "raw" / "events.jsonl"
    events.parent.mkdir(parents=True)
    append_event(events, "task.instruction", T0, 2.0, text="hello")
    append_event(events, "harness.row", T0, 2.0, row={"source": "agent", "message": "hi"})
    (workdir / "run" / "run-metadata.json").write_text('{"model_name": "m-1"}')
    return workdir / "run"


def test_cli_export_prints_the_trajectory(cli_run, run_folder):
    result = cli_run("atif", "export", "run")
    assert (result.exit_code, result.stderr) == (0, "")
    document = orjson.loads(result.stdout)
    assert list(document) == [
        "schema_version",
        "session_id",
        "trajectory_id",
        "agent",
        "steps",
        "final_metrics",
    ]
    assert (document["session_id"], document["trajectory_id"]) == ("run", "run")
    assert document["agent"]["model_name"] == "m-1"
    assert [s["message"] for s in document["steps"]] == ["hello", "hi"]


def test_cli_export_writes_and_validates(cli_run, run_folder, workdir):
    result = cli_run("atif", "export", "run", "--out", "t.json", "--json")
    assert result.exit_code == 0
    assert result.json == {
        "path": "t.json",
        "schema_version": "ATIF-v1.8",
        "session_id": "run",
        "steps": 2,
        "skipped_events": 0,
        "valid": True,
        "errors": [],
    }
    before = (workdir / "t.json").read_bytes()
    again = cli_run("atif", "export", "run", "--out", "t.json", "--json")
    assert (again.exit_code, again.json["error"]["code"]) == (1, "conflict")
    assert (workdir / "t.json").read_bytes() == before
    forced = cli_run("atif", "export", "run/raw/events.jsonl", "--out", "t.json", "--force")
    assert forced.exit_code == 0
    assert forced.stdout == "exported t.json (ATIF-v1.8, 2 steps): valid\n"


def test_cli_export_refuses_a_version_that_cannot_carry_the_run(cli_run, workdir):
    events = workdir / "events.jsonl"
    append_event(
        events, "harness.row", T0, 2.0, row={"source": "agent", "metrics": {"cached_tokens": 1}}
    )
    printed = cli_run("atif", "export", "events.jsonl", "--schema-version", "ATIF-v1.1", "--json")
    assert (printed.exit_code, printed.json["error"]["code"]) == (1, "input_invalid")
    written = cli_run(
        "atif",
        "export",
        "events.jsonl",
        "--schema-version",
        "ATIF-v1.1",
        "--out",
        "t.json",
        "--json",
    )
    assert (written.exit_code, written.json["valid"]) == (1, False)
    assert written.json["errors"][0]["location"] == "schema_version"
    unknown = cli_run("atif", "export", "events.jsonl", "--schema-version", "v2", "--json")
    assert (unknown.exit_code, unknown.json["error"]["code"]) == (1, "input_invalid")


def test_cli_export_needs_events(cli_run, workdir):
    result = cli_run("atif", "export", "nowhere", "--json")
    assert (result.exit_code, result.json["error"]["code"]) == (1, "not_found")


def test_a_rows_own_extra_is_kept_and_merged():
    step = export_trajectory(
        [
            ev("harness.row", row={"source": "agent", "extra": {"tool_status": "x", "k": 1}}),
            ev("tool.call", call_id="c", argv=["ls"]),
            ev("tool.result", call_id="c", output="", status="ok", exit_code=0),
        ],
        CONTEXT,
    ).document["steps"][0]
    assert step["extra"] == {"tool_status": {"c": {"status": "ok", "exit_code": 0}}, "k": 1}
