"""Bad trajectory files and paths: a clear error naming the file (and line), nothing touched."""

import os

import pytest

from tests.support.markers import marker_of

GOOD = (
    b'{"schema":1,"stepKind":"premath.harness.step.v1","stepId":"s1","action":"a",'
    b'"resultClass":"ok","finishedAt":"2026-02-22T00:00:01Z"}\n'
)
KIND = "premath.harness.step.v1"
DAY = "2026-02-22"
PREFIX = "error: failed to read harness trajectory rows from t.jsonl: "


def good_row(step_id: str, **fields: str) -> bytes:
    extra = "".join(f',"{name}":{value}' for name, value in fields.items())
    return (
        b'{"schema":1,"stepKind":"premath.harness.step.v1","stepId":"%s","action":"a",'
        b'"resultClass":"ok","finishedAt":"2026-02-22T00:00:01Z"%s}\n'
        % (step_id.encode(), extra.encode())
    )


def snapshot(folder):
    """Every file under `folder` with its bytes (folders show as None)."""
    return {
        str(path.relative_to(folder)): path.read_bytes() if path.is_file() else None
        for path in sorted(folder.rglob("*"))
    }


@pytest.mark.parametrize(
    ("second_line", "message"),
    [
        (b"garbage line", "failed to parse trajectory row: unexpected character"),
        (b"# a comment", "failed to parse trajectory row: unexpected character"),
        (b'{"schema":1}', "failed to parse trajectory row: missing field `stepKind`"),
        (b"[1,2]", "failed to parse trajectory row: invalid type: sequence, expected struct"),
        (b"\x00", "failed to parse trajectory row: unexpected character"),
        (
            b'{"schema":1,"stepKind":"premath.harness.step.v1","stepId":"s\x00","action":"a"}',
            "failed to parse trajectory row: ",
        ),
        (b'{"stepId":"\xff\xfe"}', "stream did not contain valid UTF-8"),
        (good_row("s", schema="true")[:-1], "invalid type: boolean `true`, expected u64"),
        (good_row("s", schema="1.0")[:-1], "invalid type: floating point `1.0`, expected u64"),
        (good_row("s", schema="-1")[:-1], "invalid value: integer `-1`, expected u64"),
        (good_row("s", witnessRefs="null")[:-1], "invalid type: null, expected a sequence"),
        (good_row("s", witnessRefs="[1]")[:-1], "invalid type: integer `1`, expected a string"),
        (good_row("s", issueId="7")[:-1], "invalid type: integer `7`, expected a string"),
        (good_row("s", stepId="null")[:-1], "invalid type: null, expected a string"),
        (good_row("s", schema="2")[:-1], "schema mismatch (expected=1, actual=2)"),
        (good_row(" ")[:-1], "invalid trajectory row: stepId must be non-empty"),
        (good_row("s", action='"\\t"')[:-1], "invalid trajectory row: action must be non-empty"),
        (good_row("s", stepKind='"v2"')[:-1], f"stepKind mismatch (expected={KIND}, actual=v2)"),
        (good_row("s", finishedAt=f'"{DAY}T00:00:01"')[:-1], f"must be RFC3339: {DAY}T00:00:01"),
        (good_row("s", finishedAt='"2026-02-22T00:00:01+01"')[:-1], "finishedAt must be RFC3339"),
        (good_row("s", startedAt='"yesterday"')[:-1], "startedAt must be RFC3339: yesterday"),
    ],
)  # fmt: skip
def test_a_bad_line_fails_the_query_naming_file_and_line(cli_run, workdir, second_line, message):
    (workdir / "t.jsonl").write_bytes(GOOD + second_line + b"\n" + GOOD)
    before = snapshot(workdir)
    outcome = cli_run("harness-trajectory", "query", "--path", "t.jsonl")
    assert (outcome.exit_code, outcome.stdout) == (1, "")
    assert outcome.stderr.startswith(PREFIX)
    assert message in outcome.stderr
    assert outcome.stderr.endswith("(path=t.jsonl, line=2)\n")
    assert outcome.stderr.count("\n") == 1
    assert snapshot(workdir) == before


def test_line_numbers_count_blank_lines(cli_run, workdir):
    (workdir / "t.jsonl").write_bytes(b"\n" + GOOD + b"   \n\n" + good_row(" "))
    outcome = cli_run("harness-trajectory", "query", "--path", "t.jsonl")
    assert outcome.stderr == (
        PREFIX + "invalid trajectory row: stepId must be non-empty (path=t.jsonl, line=5)\n"
    )


def test_a_json_query_error_is_an_artifact_invalid_object(cli_run, workdir):
    (workdir / "t.jsonl").write_bytes(GOOD + good_row("s", schema="2"))
    outcome = cli_run("harness-trajectory", "query", "--path", "t.jsonl", "--json")
    assert outcome.exit_code == 1
    assert outcome.json == {
        "error": {
            "code": "artifact_invalid",
            "message": PREFIX.removeprefix("error: ")
            + "invalid trajectory row: schema mismatch (expected=1, actual=2) "
            "(path=t.jsonl, line=2)",
        }
    }


@pytest.mark.parametrize("tail", [b'{"schema":1,"stepKi', b"\xe2\x82", b"{", b"garbage"])
def test_a_torn_last_line_is_skipped_and_reported(cli_run, workdir, tail):
    """D2-3: a writer killed mid-line leaves a tail that readers skip, never rewrite."""
    (workdir / "t.jsonl").write_bytes(GOOD + tail)
    before = snapshot(workdir)
    outcome = cli_run("harness-trajectory", "query", "--path", "t.jsonl", "--json")
    assert outcome.exit_code == 0
    assert (outcome.json["totalCount"], outcome.json["items"][0]["stepId"]) == (1, "s1")
    assert outcome.stderr == (
        "warning: t.jsonl:2: skipped an incomplete last line (a writer was interrupted); "
        "the next append moves it to a quarantine file\n"
    )
    assert snapshot(workdir) == before


def test_an_unterminated_last_line_that_parses_is_a_row(cli_run, workdir):
    (workdir / "t.jsonl").write_bytes(GOOD + good_row("s2")[:-1])
    outcome = cli_run("harness-trajectory", "query", "--path", "t.jsonl", "--json")
    assert (outcome.exit_code, outcome.stderr, outcome.json["totalCount"]) == (0, "", 2)


def test_a_bad_unterminated_row_that_parses_is_still_an_error(cli_run, workdir):
    (workdir / "t.jsonl").write_bytes(GOOD + good_row(" ")[:-1])
    outcome = cli_run("harness-trajectory", "query", "--path", "t.jsonl")
    assert outcome.exit_code == 1
    assert outcome.stderr.endswith("stepId must be non-empty (path=t.jsonl, line=2)\n")


def test_a_torn_line_that_is_not_last_is_an_error(cli_run, workdir):
    (workdir / "t.jsonl").write_bytes(GOOD + b'{"schema":1,"stepKi\n' + GOOD)
    outcome = cli_run("harness-trajectory", "query", "--path", "t.jsonl")
    assert outcome.exit_code == 1
    assert outcome.stderr.endswith("(path=t.jsonl, line=2)\n")


def test_crlf_and_unicode_whitespace_around_rows_are_accepted(cli_run, workdir):
    (workdir / "t.jsonl").write_bytes(
        GOOD[:-1] + b"\r\n" + "\u3000".encode() + good_row("s2")[:-1] + b"\x0c\n"
    )
    outcome = cli_run("harness-trajectory", "query", "--path", "t.jsonl", "--json")
    assert (outcome.exit_code, outcome.json["totalCount"]) == (0, 2)


def test_duplicate_keys_keep_the_last_value(cli_run, workdir):
    """D2-6: serde refuses duplicate keys; the hot reader keeps the last, as orjson does."""
    (workdir / "t.jsonl").write_bytes(good_row("s1", stepId='"s2"'))
    outcome = cli_run("harness-trajectory", "query", "--path", "t.jsonl", "--json")
    assert outcome.json["items"][0]["stepId"] == "s2"


def test_a_directory_is_not_a_trajectory(cli_run, workdir):
    (workdir / "t.jsonl").mkdir()
    outcome = cli_run("harness-trajectory", "query", "--path", "t.jsonl")
    assert (outcome.exit_code, outcome.stdout) == (1, "")
    assert outcome.stderr == (
        PREFIX + "invalid trajectory row: trajectory path is not a file: t.jsonl\n"
    )
    appended = cli_run(
        "harness-trajectory", "append", "--path", "t.jsonl", "--step-id", "s", "--action", "a",
        "--result-class", "ok",
    )  # fmt: skip
    assert (appended.exit_code, appended.stdout) == (1, "")
    assert appended.stderr == (
        "error: failed to append harness trajectory row at t.jsonl: "
        "failed to read/write trajectory: Is a directory (os error 21)\n"
    )
    assert sorted(p.name for p in workdir.iterdir()) == ["t.jsonl"]
    assert list((workdir / "t.jsonl").iterdir()) == []


def test_append_under_a_file_is_an_io_error(cli_run, workdir):
    (workdir / "f").write_bytes(b"x")
    outcome = cli_run(
        "harness-trajectory", "append", "--path", "f/t.jsonl", "--step-id", "s", "--action", "a",
        "--result-class", "ok",
    )  # fmt: skip
    assert (outcome.exit_code, outcome.stdout) == (1, "")
    assert outcome.stderr.startswith("error: ")
    assert "f/t.jsonl" in outcome.stderr
    assert "Traceback" not in outcome.stderr
    assert snapshot(workdir) == {"f": b"x"}


def test_query_under_a_file_is_an_empty_projection(cli_run, workdir):
    (workdir / "f").write_bytes(b"x")
    outcome = cli_run("harness-trajectory", "query", "--path", "f/t.jsonl", "--json")
    assert (outcome.exit_code, outcome.json["totalCount"]) == (0, 0)


def test_append_never_glues_a_row_onto_an_unterminated_line(cli_run, workdir):
    """D2-1: the reference writes right after the last byte; we start a new line first."""
    (workdir / "t.jsonl").write_bytes(GOOD[:-1])
    outcome = cli_run(
        "harness-trajectory", "append", "--path", "t.jsonl", "--step-id", "s2", "--action", "a",
        "--result-class", "ok", "--finished-at", "2026-02-22T00:00:01Z",
    )  # fmt: skip
    assert outcome.exit_code == 0
    assert (workdir / "t.jsonl").read_bytes() == GOOD + good_row("s2")


def test_append_after_a_malformed_line_succeeds_and_leaves_it(cli_run, workdir):
    (workdir / "t.jsonl").write_bytes(b"garbage\n")
    outcome = cli_run(
        "harness-trajectory", "append", "--path", "t.jsonl", "--step-id", "s1", "--action", "a",
        "--result-class", "ok", "--finished-at", "2026-02-22T00:00:01Z",
    )  # fmt: skip
    assert outcome.exit_code == 0
    assert (workdir / "t.jsonl").read_bytes() == b"garbage\n" + GOOD


def test_a_busy_lock_is_a_clear_error_and_the_file_is_untouched(cli_run, workdir):
    (workdir / "t.jsonl").write_bytes(GOOD)
    (workdir / "t.jsonl.lock").write_text(f"pid={os.getpid()}\nutc=2026-02-22T00:00:00Z\n")
    from premath.cli._root import AppContext
    from tests.support.cli import invoke

    outcome = invoke(
        "harness-trajectory", "append", "--path", "t.jsonl", "--step-id", "s", "--action", "a",
        "--result-class", "ok", "--json", app=AppContext(lock_timeout_s=0.05),
    )  # fmt: skip
    assert outcome.exit_code == 1
    assert outcome.json["error"]["code"] == "lock_busy"
    assert "t.jsonl.lock" in outcome.stderr
    assert (workdir / "t.jsonl").read_bytes() == GOOD


def test_a_lock_left_by_a_dead_process_is_recovered(cli_run, workdir):
    (workdir / "t.jsonl.lock").write_text(marker_of(999999999))
    outcome = cli_run(
        "harness-trajectory", "append", "--path", "t.jsonl", "--step-id", "s1", "--action", "a",
        "--result-class", "ok", "--finished-at", "2026-02-22T00:00:01Z",
    )  # fmt: skip
    assert outcome.exit_code == 0
    assert "removed stale lock" in outcome.stderr
    assert snapshot(workdir) == {"t.jsonl": GOOD}


def test_arguments_that_are_not_utf8_are_a_usage_error(cli_run, workdir):
    outcome = cli_run(
        "harness-trajectory", "append", "--path", "t.jsonl", "--step-id", "s\udcff",
        "--action", "a", "--result-class", "ok",
    )  # fmt: skip
    assert (outcome.exit_code, outcome.stdout) == (2, "")
    assert outcome.stderr == "error: invalid UTF-8 was detected in one or more arguments\n"
    assert list(workdir.iterdir()) == []


def test_a_fifo_is_not_a_trajectory_and_is_not_read(cli_run, workdir):
    os.mkfifo(workdir / "t.jsonl")
    outcome = cli_run("harness-trajectory", "query", "--path", "t.jsonl")
    assert (outcome.exit_code, outcome.stdout) == (1, "")
    assert outcome.stderr.endswith("trajectory path is not a file: t.jsonl\n")
