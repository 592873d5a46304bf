"""harness-trajectory against the reference's worked examples (harness-cli.md §3.4)."""

import pytest

from premath.store.canonical import stdout_bytes

W1 = "artifacts/ciwitness/w1.json"
ROW_1 = (
    '{"schema":1,"stepKind":"premath.harness.step.v1","stepId":"step-1","issueId":"bd-1",'
    '"action":"run.check","resultClass":"transient_failure",'
    '"witnessRefs":["artifacts/ciwitness/w1.json"],'
    '"lineageRefs":["ctx://issue/bd-1/ctx-a","refinement://worker-loop/bd-1/worker.1/ref-a"],'
    '"finishedAt":"2026-02-22T00:01:00Z"}\n'
)
ROW_2 = (
    '{"schema":1,"stepKind":"premath.harness.step.v1","stepId":"step-2","issueId":"bd-2",'
    '"action":"run.check","resultClass":"policy_reject",'
    '"witnessRefs":["artifacts/ciwitness/w2.json"],"finishedAt":"2026-02-22T00:02:00Z"}\n'
)
ROW_3 = (
    '{"schema":1,"stepKind":"premath.harness.step.v1","stepId":"step-3","issueId":"bd-3",'
    '"action":"apply.patch","resultClass":"accepted",'
    '"witnessRefs":["artifacts/ciwitness/w3.json"],"finishedAt":"2026-02-22T00:03:00Z"}\n'
)


def append(cli_run, *args):
    return cli_run("harness-trajectory", "append", "--path", "w/t.jsonl", *args)


def query(cli_run, *args):
    return cli_run("harness-trajectory", "query", "--path", "w/t.jsonl", *args)


def row(step_id, finished_at, result_class="ok", action="a", extra=""):
    return (
        f'{{"schema":1,"stepKind":"premath.harness.step.v1","stepId":"{step_id}",'
        f'"action":"{action}","resultClass":"{result_class}"{extra},"finishedAt":"{finished_at}"}}\n'
    )


@pytest.fixture
def three_rows(cli_run, workdir):
    first = append(
        cli_run,
        "--step-id", "step-1", "--issue-id", "bd-1", "--action", "run.check",
        "--result-class", "transient_failure", "--witness-ref", W1, "--witness-ref", W1,
        "--lineage-ref", "refinement://worker-loop/bd-1/worker.1/ref-a",
        "--lineage-ref", "ctx://issue/bd-1/ctx-a", "--lineage-ref", "ctx://issue/bd-1/ctx-a",
        "--finished-at", "2026-02-22T00:01:00Z", "--json",
    )  # fmt: skip
    for step, issue, action, result_class, minute in (
        ("step-2", "bd-2", "run.check", "policy_reject", "02"),
        ("step-3", "bd-3", "apply.patch", "accepted", "03"),
    ):
        outcome = append(
            cli_run, "--step-id", step, "--issue-id", issue, "--action", action,
            "--result-class", result_class,
            "--witness-ref", f"artifacts/ciwitness/w{step[-1]}.json",
            "--finished-at", f"2026-02-22T00:{minute}:00Z",
        )  # fmt: skip
        assert (outcome.exit_code, outcome.stderr) == (0, "")
    return first


def test_append_writes_the_normalised_row_and_prints_it(three_rows, workdir):
    assert (three_rows.exit_code, three_rows.stderr) == (0, "")
    assert three_rows.stdout.encode() == stdout_bytes(
        {
            "action": "harness-trajectory.append",
            "path": "w/t.jsonl",
            "row": {
                "schema": 1,
                "stepKind": "premath.harness.step.v1",
                "stepId": "step-1",
                "issueId": "bd-1",
                "action": "run.check",
                "resultClass": "transient_failure",
                "witnessRefs": [W1],
                "lineageRefs": [
                    "ctx://issue/bd-1/ctx-a",
                    "refinement://worker-loop/bd-1/worker.1/ref-a",
                ],
                "finishedAt": "2026-02-22T00:01:00Z",
            },
        }
    )
    assert (workdir / "w" / "t.jsonl").read_text() == ROW_1 + ROW_2 + ROW_3
    assert sorted(p.name for p in (workdir / "w").iterdir()) == ["t.jsonl"]  # no lock left


def test_query_latest_is_newest_first_with_counts_over_all_rows(three_rows, cli_run):
    outcome = query(cli_run, "--mode", "latest", "--limit", "2", "--json")
    assert outcome.exit_code == 0
    document = outcome.json
    assert [item["stepId"] for item in document["items"]] == ["step-3", "step-2"]
    assert {k: v for k, v in document.items() if k != "items"} == {
        "action": "harness-trajectory.query",
        "count": 2,
        "failedCount": 2,
        "mode": "latest",
        "path": "w/t.jsonl",
        "projectionKind": "premath.harness.trajectory.projection.v1",
        "retryNeededCount": 1,
        "totalCount": 3,
    }
    assert document["items"][1] == {
        "action": "run.check",
        "finishedAt": "2026-02-22T00:02:00Z",
        "issueId": "bd-2",
        "resultClass": "policy_reject",
        "schema": 1,
        "stepId": "step-2",
        "stepKind": "premath.harness.step.v1",
        "witnessRefs": ["artifacts/ciwitness/w2.json"],
    }


def test_query_text_output(three_rows, cli_run):
    outcome = query(cli_run, "--mode", "latest", "--limit", "2")
    assert outcome.stdout == (
        "premath harness-trajectory query\n"
        "  Path: w/t.jsonl\n"
        "  Mode: latest\n"
        "  Count: 2 (total=3, failed=2, retry_needed=1)\n"
        "  - step-3 [accepted] apply.patch (2026-02-22T00:03:00Z)\n"
        "  - step-2 [policy_reject] run.check (2026-02-22T00:02:00Z)\n"
    )


def test_append_text_output(cli_run, workdir):
    outcome = append(cli_run, "--step-id", "s", "--action", "a", "--result-class", "ok")
    assert outcome.stdout == (
        "premath harness-trajectory append\n  Step ID: s\n  Result Class: ok\n  Path: w/t.jsonl\n"
    )
    assert (workdir / "w" / "t.jsonl").read_text() == row("s", "2026-03-01T10:00:00Z")


@pytest.mark.parametrize(
    ("mode", "shown", "steps"),
    [("failed", "failed", ["step-2", "step-1"]), ("retry-needed", "retry_needed", ["step-1"])],
)
def test_query_modes_filter_but_keep_the_totals(three_rows, cli_run, mode, shown, steps):
    document = query(cli_run, "--mode", mode, "--limit", "10", "--json").json
    assert [item["stepId"] for item in document["items"]] == steps
    assert (document["mode"], document["count"]) == (shown, len(steps))
    assert (document["totalCount"], document["failedCount"], document["retryNeededCount"]) == (
        3,
        2,
        1,
    )


def test_order_is_the_true_instant_then_step_id_then_action_then_file_order(cli_run, workdir):
    (workdir / "w").mkdir()
    (workdir / "w" / "t.jsonl").write_text(
        row("A", "2026-02-22T00:30:00+01:00")  # 23:30Z, sorts below B
        + row("B", "2026-02-21T23:45:00Z")
        + row("b", "2026-02-21T23:59:59Z", action="y")
        + row("b", "2026-02-21T23:59:59Z", action="x", result_class="first")
        + row("a", "2026-02-21T23:59:59.000000000Z")
        + row("b", "2026-02-21T23:59:59z", action="x", result_class="second")
        + row("leap", "2026-02-21T23:59:60.5Z")
        + row("next", "2026-02-22T00:00:00Z")
    )
    items = query(cli_run, "--json").json["items"]
    assert [(i["stepId"], i["action"], i["resultClass"]) for i in items] == [
        ("next", "a", "ok"),
        ("leap", "a", "ok"),
        ("a", "a", "ok"),
        ("b", "x", "first"),
        ("b", "x", "second"),
        ("b", "y", "ok"),
        ("B", "a", "ok"),
        ("A", "a", "ok"),
    ]


def test_limit_zero_keeps_the_counts(three_rows, cli_run):
    document = query(cli_run, "--limit", "0", "--json").json
    assert (document["count"], document["items"], document["totalCount"]) == (0, [], 3)


@pytest.mark.parametrize(
    "limit",
    ["-1", "1.5", "abc", "", "18446744073709551616", "1_0", " 5", "\u0663", "+", "0x1", "9" * 5000],
)
def test_a_limit_that_is_not_a_usize_is_a_usage_error(three_rows, cli_run, limit):
    outcome = query(cli_run, "--limit", limit)
    assert (outcome.exit_code, outcome.stdout) == (2, "")
    assert "--limit" in outcome.stderr


@pytest.mark.parametrize(
    ("limit", "count"), [("18446744073709551615", 3), ("+1", 1), ("007", 3), ("0" * 30 + "2", 2)]
)
def test_usize_limits_are_accepted(three_rows, cli_run, limit, count):
    assert query(cli_run, "--limit", limit, "--json").json["count"] == count


@pytest.mark.parametrize(
    "args",
    [
        ("query", "--mode", "failed", "--mode", "latest"),
        ("query", "--limit", "1", "--limit", "2"),
        ("query", "--path", "a", "--path", "b"),
        ("query", "--json", "--json"),
        ("append", "--step-id", "s", "--step-id", "t", "--action", "a", "--result-class", "ok"),
        ("append", "--step-id", "s", "--action", "a", "--result-class", "ok",
         "--finished-at", "2026-02-22T00:00:00Z", "--finished-at", "2026-02-22T00:00:00Z"),
        ("query", "--mode", "retry_needed"),
        ("query", "--mode", "Latest"),
        ("append", "--action", "a", "--result-class", "ok"),
    ],
)  # fmt: skip
def test_usage_errors_exit_2_and_touch_nothing(cli_run, workdir, args):
    outcome = cli_run("harness-trajectory", *args)
    assert outcome.exit_code == 2
    assert "Error:" in outcome.stderr
    if "--json" in args:
        assert outcome.json["error"]["code"] == "usage_error"
    else:
        assert outcome.stdout == ""
    assert list(workdir.iterdir()) == []


def test_the_group_without_a_command_is_a_usage_error(cli_run):
    outcome = cli_run("harness-trajectory")
    assert outcome.exit_code == 2
    assert "append" in outcome.stderr
    assert "query" in outcome.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--finished-at", "2026-02-22T00:01Z"), "finishedAt must be RFC3339: 2026-02-22T00:01Z"),
        (("--finished-at", ""), "finishedAt must be non-empty"),
        (("--step-id", "  ", "--finished-at", "bad"), "stepId must be non-empty"),
        (("--started-at", "2026-02-22"), "startedAt must be RFC3339: 2026-02-22"),
        (("--action", " "), "action must be non-empty"),
        (("--result-class", "\t"), "resultClass must be non-empty"),
        (("--finished-at", "2026-02-22 00:01:00Z"), "finishedAt must be RFC3339"),
        (("--finished-at", "2026-02-22T00:00:00\u221201:00"), "finishedAt must be RFC3339"),
    ],
)
def test_invalid_rows_are_refused_before_anything_is_created(cli_run, workdir, args, message):
    defaults = {"--step-id": "s", "--action": "a", "--result-class": "ok"}
    given = dict(zip(args[::2], args[1::2], strict=True))
    argv = [item for pair in {**defaults, **given}.items() for item in pair]
    outcome = cli_run("harness-trajectory", "append", "--path", "out/t.jsonl", *argv)
    assert (outcome.exit_code, outcome.stdout) == (1, "")
    assert outcome.stderr.startswith(
        "error: failed to append harness trajectory row at out/t.jsonl: invalid trajectory row: "
    )
    assert message in outcome.stderr
    assert list(workdir.iterdir()) == []


def test_a_json_error_is_also_an_error_object_on_stdout(cli_run, workdir):
    outcome = cli_run(
        "harness-trajectory", "append", "--path", "t.jsonl", "--step-id", " ", "--action", "a",
        "--result-class", "ok", "--json",
    )  # fmt: skip
    assert outcome.exit_code == 1
    assert outcome.json == {
        "error": {
            "code": "input_invalid",
            "message": "failed to append harness trajectory row at t.jsonl: "
            "invalid trajectory row: stepId must be non-empty",
        }
    }


def test_times_are_stored_verbatim_after_trimming(cli_run, workdir):
    outcome = append(
        cli_run, "--step-id", "a", "--action", "x", "--result-class", "ok", "--started-at", "",
        "--finished-at", " 2026-02-22T00:01:00.5z ",
    )  # fmt: skip
    assert outcome.exit_code == 0
    assert (workdir / "w" / "t.jsonl").read_text() == row("a", "2026-02-22T00:01:00.5z", action="x")


def test_query_of_a_missing_or_blank_file_is_an_empty_projection(cli_run, workdir):
    (workdir / "blank.jsonl").write_text("\n \n\t\r\n\u3000\n")
    (workdir / "empty.jsonl").write_bytes(b"")
    for path in ("none/x.jsonl", "blank.jsonl", "empty.jsonl"):
        outcome = cli_run("harness-trajectory", "query", "--path", path, "--json")
        assert (outcome.exit_code, outcome.stderr) == (0, "")
        assert (outcome.json["count"], outcome.json["totalCount"]) == (0, 0)


def test_query_normalises_rows_and_ignores_unknown_fields(cli_run, workdir):
    (workdir / "t.jsonl").write_text(
        '{"schema":1,"stepKind":" premath.harness.step.v1 ","stepId":" s1 ","issueId":" ",'
        '"action":" act ","resultClass":" ok ","witnessRefs":["b"," a ","","b"],'
        '"lineageRefs":[],"startedAt":null,"finishedAt":" 2026-02-22T00:00:00Z ","extra":{}}\n'
    )
    outcome = cli_run("harness-trajectory", "query", "--path", "t.jsonl", "--json")
    assert outcome.json["items"] == [
        {
            "action": "act",
            "finishedAt": "2026-02-22T00:00:00Z",
            "resultClass": "ok",
            "schema": 1,
            "stepId": "s1",
            "stepKind": "premath.harness.step.v1",
            "witnessRefs": ["a", "b"],
        }
    ]
