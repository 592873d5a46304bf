"""harness-trajectory as a real process: exit status, stdout purity, the streams kept apart."""

import orjson

from tests.support.cli import run_premath

ROW = (
    b'{"schema":1,"stepKind":"premath.harness.step.v1","stepId":"s1","action":"a",'
    b'"resultClass":"timeout","finishedAt":"2026-02-22T00:00:01Z"}\n'
)


def test_a_torn_tail_warns_on_stderr_and_stdout_holds_one_document(tmp_path):
    (tmp_path / "t.jsonl").write_bytes(ROW + b'{"schema":1,"ste')
    proc = run_premath("harness-trajectory", "query", "--path", "t.jsonl", "--json", cwd=tmp_path)
    assert proc.returncode == 0
    document = orjson.loads(proc.stdout)
    assert (document["totalCount"], document["retryNeededCount"]) == (1, 1)
    assert proc.stderr.decode().startswith("warning: t.jsonl:2: skipped an incomplete last line")


def test_a_bad_row_exits_1_with_one_error_line_and_no_traceback(tmp_path):
    (tmp_path / "t.jsonl").write_bytes(ROW + b"\x00\n" + ROW)
    proc = run_premath("harness-trajectory", "query", "--path", "t.jsonl", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (1, b"")
    assert proc.stderr.decode() == (
        "error: failed to read harness trajectory rows from t.jsonl: failed to parse trajectory "
        "row: unexpected character, expected a JSON value at line 1 column 1 "
        "(path=t.jsonl, line=2)\n"
    )


def test_a_repeated_option_exits_2_before_writing_anything(tmp_path):
    proc = run_premath(
        "harness-trajectory", "append", "--step-id", "a", "--action", "x", "--action", "y",
        "--result-class", "ok", cwd=tmp_path,
    )  # fmt: skip
    assert (proc.returncode, proc.stdout) == (2, b"")
    assert b"cannot be used multiple times" in proc.stderr
    assert list(tmp_path.iterdir()) == []
