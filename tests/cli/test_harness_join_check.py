"""`premath harness-join-check` through the real exit point: JSON and text output, exit codes,
errors (with D1-1's JSON error object), the public CLI corpus, and a real process."""

from pathlib import Path

import orjson
import pytest

from tests.harness.join_check_inputs import baseline, evidence
from tests.support.cli import SHARED, run_premath
from tests.support.corpus import assert_corpus, require_shared, run_scenario

DIVERGENT = {
    "harness-join-check.errors.normalisation": "D1-1",
}


def _write(document, name: str = "input.json") -> str:
    Path(name).write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")
    return name


def test_corpus_matches_the_reference_except_declared_divergences():
    assert_corpus("harness-join-check", DIVERGENT)


def test_d1_1_normalisation_errors_print_our_error_object():
    """Divergence D1-1: with --json the reference's stdout is empty; ours is the error object."""
    result = run_scenario("harness-join-check.errors.normalisation")
    messages = [
        "toolUse[].disposition invalid: unsupported value `observed_only` "
        "(expected consumed|observed|discarded)",
        "toolRequests contains conflicting duplicate toolCallId: tc-1",
        "callSpec.callId must be non-empty",
    ]
    steps = result["actual"]["steps"]
    for step, message in zip(steps[:3], messages, strict=True):
        assert step["exit"] == 2
        assert step["stdout"] == {
            "json": {
                "error": {
                    "code": "usage_error",
                    "message": f"harness_join_check_invalid: {message}",
                }
            }
        }
    # Without --json (the last step) stdout stays empty, as in the reference.
    assert steps[3]["exit"] == 2
    assert steps[3]["stdout"] == {"text": ""}


def test_accepted_text_output(cli_run):
    outcome = cli_run("harness-join-check", "--input", _write(baseline()))
    assert (outcome.exit_code, outcome.stderr) == (0, "")
    assert outcome.stdout == (
        "premath harness-join-check\n"
        "  Input: input.json\n"
        "  Result: accepted\n"
        "  Failure Classes: 0\n"
    )


def test_rejected_text_output_lists_sorted_classes_and_exits_0(cli_run):
    document = baseline()
    evidence(document)["toolUse"] = []
    evidence(document)["protocolState"]["stopReason"] = "refusal"
    outcome = cli_run("harness-join-check", "--input", _write(document, "turn 2.json"))
    assert (outcome.exit_code, outcome.stderr) == (0, "")
    assert outcome.stdout == (
        "premath harness-join-check\n"
        "  Input: turn 2.json\n"
        "  Result: rejected\n"
        "  Failure Classes: 3\n"
        "  - protocol.stop_reason_unhandled\n"
        "  - tool.join_incomplete\n"
        "  - tool.use_missing\n"
    )


def test_rejected_json_output_exits_0(cli_run):
    document = baseline()
    document["truncationConstraints"] = {"required": True, "valid": False}
    outcome = cli_run("harness-join-check", "--input", _write(document), "--json")
    assert (outcome.exit_code, outcome.stderr) == (0, "")
    assert outcome.json["result"] == "rejected"
    assert outcome.json["failureClasses"] == ["tool.response_truncation_policy_violation"]
    assert outcome.json["joinClosed"] is False
    assert outcome.json["witness"]["mutationInput"]["joinClosed"] is True


def test_invalid_input_without_json_prints_nothing_on_stdout(cli_run):
    document = baseline()
    evidence(document)["toolRequests"] = None
    outcome = cli_run("harness-join-check", "--input", _write(document))
    assert (outcome.exit_code, outcome.stdout) == (2, "")
    assert outcome.stderr == (
        "error: harness_join_check_invalid: failed to parse input json input.json: "
        "invalid type: null, expected a sequence\n"
    )


def test_invalid_input_with_json_prints_the_error_object(cli_run):
    outcome = cli_run("harness-join-check", "--input", "absent.json", "--json")
    message = (
        "harness_join_check_invalid: failed to read input absent.json: "
        "No such file or directory (os error 2)"
    )
    assert outcome.exit_code == 2
    assert outcome.json == {"error": {"code": "usage_error", "message": message}}
    assert outcome.stderr == f"error: {message}\n"


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("--input",),
        ("--input", "a.json", "--input", "b.json"),
        ("--input", "a.json", "--bogus"),
    ],
)
def test_usage_errors_exit_2(cli_run, args):
    outcome = cli_run("harness-join-check", *args)
    assert (outcome.exit_code, outcome.stdout) == (2, "")
    assert outcome.stderr


def test_help_names_the_command(cli_run):
    outcome = cli_run("harness-join-check", "--help")
    assert outcome.exit_code == 0
    assert "Check that every tool call of a turn got its result." in outcome.stdout
    assert "--input" in outcome.stdout


def test_real_process_prints_the_reference_bytes(tmp_path):
    vector = "golden/join_closed_accept"
    typestate = SHARED / "conformance" / "typestate"
    case = orjson.loads(require_shared(typestate / vector / "case.json").read_bytes())
    golden = orjson.loads((typestate / "golden-stdout.json").read_bytes())["vectors"][vector]
    (tmp_path / "input.json").write_bytes(orjson.dumps(case["input"]))

    completed = run_premath("harness-join-check", "--input", "input.json", "--json", cwd=tmp_path)

    assert completed.returncode == golden["exitCode"] == 0
    assert completed.stdout.decode() == golden["stdout"]
    assert completed.stderr == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["input.json"]


def test_real_process_invalid_input_exits_2_without_traceback(tmp_path):
    (tmp_path / "input.json").write_bytes(b'{"evidence": {"callSpec": []}}')
    completed = run_premath("harness-join-check", "--input", "input.json", cwd=tmp_path)
    assert completed.returncode == 2
    assert completed.stdout == b""
    assert completed.stderr.startswith(
        b"error: harness_join_check_invalid: failed to parse input json input.json: "
    )
    assert b"Traceback" not in completed.stderr
