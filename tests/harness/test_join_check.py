"""The JoinClosed gate: the 20 reference vectors byte for byte, the reference's edge cases,
and the digests' worked values (typestate.md §4.4, §8)."""

from pathlib import Path
from typing import Any

import orjson
import pytest

from premath.errors import InvalidUsage
from premath.harness.join.check import evaluate_join_check, run_join_check
from premath.harness.join.digests import EMPTY_SET_DIGEST, digest, digest_string
from premath.models.join_check import EMITTED_FAILURE_CLASSES
from premath.store.canonical import stdout_bytes
from tests.harness.join_check_inputs import baseline, evidence
from tests.support.cli import SHARED, invoke
from tests.support.corpus import require_shared

VECTORS = SHARED / "conformance" / "typestate"


def _manifest_ids() -> list[str]:
    manifest = VECTORS / "manifest.json"
    if not manifest.exists():
        return ["<absent>"]
    return list(orjson.loads(manifest.read_bytes())["vectors"])


@pytest.fixture(scope="module")
def golden_stdout() -> dict[str, Any]:
    path = require_shared(VECTORS / "golden-stdout.json")
    vectors: dict[str, Any] = orjson.loads(path.read_bytes())["vectors"]
    return vectors


@pytest.mark.parametrize("vector_id", _manifest_ids())
def test_vector_matches_reference_stdout_and_expectation(vector_id, golden_stdout, workdir):
    case = orjson.loads(require_shared(VECTORS / vector_id / "case.json").read_bytes())
    expect = orjson.loads((VECTORS / vector_id / "expect.json").read_bytes())
    # Fed as the reference's runner feeds it: the input alone, pretty-printed, in a file.
    Path("input.json").write_bytes(orjson.dumps(case["input"], option=orjson.OPT_INDENT_2) + b"\n")

    outcome = invoke("harness-join-check", "--input", "input.json", "--json")

    assert outcome.exit_code == golden_stdout[vector_id]["exitCode"] == 0
    assert outcome.stdout == golden_stdout[vector_id]["stdout"]
    assert outcome.stderr == ""
    output = outcome.json
    assert output["result"] == expect["result"]
    assert sorted(set(output["failureClasses"])) == sorted(set(expect["expectedFailureClasses"]))
    assert output["joinClosed"] is expect["expectedJoinClosed"]


def test_vectors_cover_exactly_the_emitted_classes():
    """The reference runner's coverage guard, against our class constant instead of Rust source."""
    expected: set[str] = set()
    for vector_id in _manifest_ids():
        expect_path = require_shared(VECTORS / vector_id / "expect.json")
        expected.update(orjson.loads(expect_path.read_bytes())["expectedFailureClasses"])
    assert expected == EMITTED_FAILURE_CLASSES
    assert len(EMITTED_FAILURE_CLASSES) == 18


def _classes(document: dict[str, Any]) -> list[str]:
    output = evaluate_join_check(document)
    assert output["joinClosed"] is (output["result"] == "accepted")
    classes: list[str] = output["failureClasses"]
    return classes


def _without_handoff() -> dict[str, Any]:
    document = baseline()
    del evidence(document)["handoff"]
    return document


def test_baseline_is_accepted_with_the_reference_digests():
    output = evaluate_join_check(baseline())
    digests = output["normalized"]["digests"]
    assert output["result"] == "accepted"
    assert digests["protocolStateDigest"] == (
        "sha256:b09cfc5398f291fac6f31a377f8c1bed711fa32c6784980d7fb449cb0a6918a8"
    )
    assert digests["requestSetDigest"] == (
        "sha256:71b386335e46180e05bc9b8174a6058a9816b80074e7cc5742fbf766b632b461"
    )
    assert digests["handoffDigest"] == (
        "sha256:57ac62d16ae1876025c24e4746ad3e5140db06cf2ceb2e5302db61aa6f1e608a"
    )
    assert digests["joinSetDigest"] == (
        "sha256:db7ba52648cc9e4f3ba87de0a288e46e7fa354c8f54d3acb069b5570fdaf7446"
    )
    assert output["witness"]["digests"] == digests


def test_empty_sets_and_strings_digest_as_the_reference():
    document = baseline()
    evidence(document)["toolRender"] = []
    output = evaluate_join_check(document)
    assert output["normalized"]["digests"]["toolRenderSetDigest"] == EMPTY_SET_DIGEST
    assert digest([]) == EMPTY_SET_DIGEST
    assert digest_string("") == (
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )


def test_without_handoff_the_digest_key_is_left_out_but_null_in_the_join_set():
    output = evaluate_join_check(_without_handoff())
    assert "handoffDigest" not in output["normalized"]["digests"]
    assert "handoffDigest" not in output["witness"]["joinInput"]
    assert "handoff" not in output["normalized"]
    # golden/join_use_missing has no handoff; its join set hashes `handoffDigest: null`.
    assert (
        output["normalized"]["digests"]["joinSetDigest"]
        != (evaluate_join_check(baseline())["normalized"]["digests"]["joinSetDigest"])
    )


def _set(path: str, value: Any):
    def change(document: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = document
        for name in parents:
            target = target[name]
        target[last] = value

    return change


def _add_result_fields(**fields: Any):
    def change(document: dict[str, Any]) -> None:
        evidence(document)["toolResults"][0].update(fields)

    return change


def _replace_result(row: dict[str, Any]):
    def change(document: dict[str, Any]) -> None:
        evidence(document)["toolResults"] = [{"toolCallId": "tc-1", **row}]

    return change


# typestate.md §8 "Additional edge cases (observed on the reference build)", as data.
EDGE_CASES: list[tuple[str, Any, list[str]]] = [
    (
        "handoff constraints without a handoff",
        _set(
            "handoffConstraints",
            {
                "requiredArtifactRefs": ["artifact://x"],
                "allowedTargets": ["worker.frontend"],
                "requireReturnPath": True,
            },
        ),
        [
            "handoff.required_artifact_missing",
            "handoff.return_path_missing",
            "handoff.target_not_allowed",
        ],
    ),
    (
        "all four constraint blocks empty",
        lambda d: d.update(
            protocolConstraints={},
            handoffConstraints={},
            truncationConstraints={},
            decompositionConstraints={},
        ),
        [],
    ),
    (
        "truncation required, valid defaults to false",
        _set("truncationConstraints", {"required": True}),
        ["tool.response_truncation_policy_violation"],
    ),
    (
        "expected execution pattern trimmed and lowercased",
        _set("decompositionConstraints", {"expectedExecutionPattern": " PARALLEL "}),
        [],
    ),
    (
        "admissible but the wrong decomposition policy",
        _set("decompositionConstraints", {"admissible": True, "expectedPolicyDigest": "other"}),
        ["coordination.decomposition_policy_violation"],
    ),
    (
        "claimed without claim id or provenance",
        _set("governanceProfile", {"claimed": True}),
        ["governance.policy_package_unpinned"],
    ),
    (
        "unknown claim id even when unclaimed",
        _set("governanceProfile", {"claimId": "x", "claimed": False}),
        ["governance.claim_id_invalid"],
    ),
    (
        "status-less result with an untyped rawError object",
        _replace_result({"rawError": {"detail": "x"}}),
        ["tool.schema_invalid"],
    ),
    (
        "status-less result with a rawError string",
        _replace_result({"rawError": "boom"}),
        ["tool.schema_invalid"],
    ),
    ("ok status with an error code", _add_result_fields(errorCode="E1"), []),
    (
        "error status without a message",
        _replace_result({"status": "error", "errorCode": "E1", "retryable": False}),
        ["tool.schema_invalid"],
    ),
    (
        "untrimmed upper-case error status with a full envelope",
        _replace_result(
            {"status": " ERROR ", "errorCode": "E1", "retryable": True, "errorMessage": "m"}
        ),
        [],
    ),
    (
        "blank errorCode falls back to rawError.code in the envelope check",
        _replace_result(
            {
                "status": "error",
                "rawError": {"errorCode": " ", "code": "C", "retryable": True, "message": "m"},
            }
        ),
        [],
    ),
    (
        "identical duplicate request after trimming",
        lambda d: evidence(d)["toolRequests"].append(
            {"toolCallId": " tc-1 ", "toolName": "fs.read"}
        ),
        [],
    ),
    (
        "upper-case disposition",
        lambda d: evidence(d)["toolUse"][0].update(disposition="DISCARDED"),
        [],
    ),
    (
        "no continuation, observed use, no context rows",
        lambda d: evidence(d).update(
            protocolState={"stopReason": "tool_use", "continuationAllowed": False},
            toolUse=[{"toolCallId": "tc-1", "disposition": "observed"}],
            toolRender=[],
            reminderQueue=[],
            stateViews=[],
        ),
        [],
    ),
    (
        "no continuation, consumed use, no context rows",
        lambda d: evidence(d).update(
            protocolState={"stopReason": "tool_use", "continuationAllowed": False},
            toolRender=[],
            reminderQueue=[],
            stateViews=[],
        ),
        ["context.injection_point_missing", "context.queue_policy_violation"],
    ),
    (
        "untrimmed upper-case stop reason",
        _set("evidence.protocolState.stopReason", " END_TURN "),
        [],
    ),
    ("unvalidated action mode", _set("evidence.callSpec.actionMode", "Weird"), []),
    (
        "state view under another policy is a queue policy violation",
        lambda d: evidence(d)["stateViews"][0].update(policyDigest="state.pol.v2"),
        ["context.queue_policy_violation"],
    ),
    (
        "extra render rows are harmless",
        lambda d: evidence(d)["toolRender"].append(
            {**evidence(d)["toolRender"][0], "toolCallId": "tc-extra"}
        ),
        [],
    ),
    (
        "pinned provenance with a blank package ref is unpinned",
        _set(
            "governanceProfile",
            {
                "claimId": "profile.doctrine_inf_governance.v0",
                "claimed": True,
                "policyProvenance": {
                    "pinned": True,
                    "packageRef": " ",
                    "expectedDigest": "sha256:a",
                    "boundDigest": "sha256:a",
                },
            },
        ),
        ["governance.policy_package_unpinned"],
    ),
    (
        "parallel transport order null or true is fine",
        _set("protocolConstraints", {"parallelTransportOrderValid": None}),
        [],
    ),
]


@pytest.mark.parametrize(
    ("change", "expected"),
    [pytest.param(change, expected, id=name) for name, change, expected in EDGE_CASES],
)
def test_reference_edge_cases(change, expected):
    document = _without_handoff()
    change(document)
    assert _classes(document) == expected


def test_status_less_result_with_untyped_raw_error_normalises_to_ok():
    """typestate.md §12.5: normalisation and the envelope check read rawError differently."""
    document = baseline()
    evidence(document)["toolResults"] = [{"toolCallId": "tc-1", "rawError": {"detail": "x"}}]
    output = evaluate_join_check(document)
    assert output["normalized"]["toolResults"] == [{"status": "ok", "toolCallId": "tc-1"}]
    assert output["failureClasses"] == ["tool.schema_invalid"]


def test_error_material_from_raw_error_and_defaults():
    document = baseline()
    evidence(document)["toolResults"] = [
        {"toolCallId": "tc-1", "rawError": {"code": " E9 ", "retryable": True, "message": " m "}}
    ]
    output = evaluate_join_check(document)
    assert output["normalized"]["toolResults"] == [
        {
            "error": {
                "errorCode": "E9",
                "errorMessageDigest": digest_string("m"),
                "retryable": True,
            },
            "status": "error",
            "toolCallId": "tc-1",
        }
    ]
    assert output["result"] == "accepted"
    # A present errorCode key, even blank, stops normalisation's fallback to `code`.
    evidence(document)["toolResults"] = [
        {"toolCallId": "tc-1", "status": "error", "rawError": {"errorCode": "", "code": "E9"}}
    ]
    error = evaluate_join_check(document)["normalized"]["toolResults"][0]["error"]
    assert error == {
        "errorCode": "unknown_error",
        "errorMessageDigest": digest_string(""),
        "retryable": False,
    }


def test_payload_digest_matches_the_reference():
    """Value from the reference's output for the corpus's normalised-multi-tool scenario."""
    document = baseline()
    evidence(document)["toolResults"] = [
        {"toolCallId": "tc-1", "payload": {"b": [1, "x", None], "a": "é"}}
    ]
    row = evaluate_join_check(document)["normalized"]["toolResults"][0]
    assert row["resultDigest"] == (
        "sha256:703084cf91917ca00dd852d5060cb8f4eca6886097213d49816a822b129dabba"
    )


def test_payload_numbers_hash_in_serde_form(workdir):
    """Floats as serde/ryu writes them; integers beyond u64 become f64 first (typestate.md §4.4)."""
    document = baseline()
    evidence(document)["toolResults"] = [{"toolCallId": "tc-1", "payload": {"p": "@"}}]
    payload_text = (
        b'{"big":18446744073709551616,"neg":-9223372036854775809,"w":1e20,"x":1e16,'
        b'"y":1.5e-7,"z":0.00001,"one":1.0,"e2":1E2,"negzero":-0.0,"i":-0,"u":18446744073709551615}'
    )
    data = orjson.dumps(document).replace(b'{"p":"@"}', payload_text)
    Path("input.json").write_bytes(data)
    row = run_join_check("input.json")["normalized"]["toolResults"][0]
    serde_text = (
        b'{"big":1.8446744073709552e19,"e2":100.0,"i":0,"neg":-9.223372036854776e18,'
        b'"negzero":-0.0,"one":1.0,"u":18446744073709551615,"w":1e20,"x":1e16,"y":1.5e-7,'
        b'"z":0.00001}'
    )
    assert row["resultDigest"] == digest_string(serde_text.decode())


def test_duplicate_keys_inside_payload_keep_the_last_value(workdir):
    document = baseline()
    evidence(document)["toolResults"] = [{"toolCallId": "tc-1", "payload": {"p": "@"}}]
    Path("input.json").write_bytes(orjson.dumps(document).replace(b'{"p":"@"}', b'{"a":1,"a":2}'))
    row = run_join_check("input.json")["normalized"]["toolResults"][0]
    assert row["resultDigest"] == digest({"a": 2})


def test_non_ascii_and_control_characters_hash_as_serde_escapes_them():
    document = baseline()
    evidence(document)["toolRequests"][0]["toolName"] = "fs.read\u001f\u00e9/\u007f"
    output = evaluate_join_check(document)
    expected = digest_string('[{"toolCallId":"tc-1","toolName":"fs.read\\u001fé/\u007f"}]')
    assert output["normalized"]["digests"]["requestSetDigest"] == expected


def test_rust_trim_keeps_ascii_separators():
    """U+001F is not Unicode White_Space: Rust keeps it where Python's strip() would not."""
    document = baseline()
    evidence(document)["callSpec"]["callId"] = "\u001f"
    output = evaluate_join_check(document)
    assert output["normalized"]["callSpec"]["callId"] == "\u001f"


def test_session_and_trajectory_refs_are_normalised_into_the_mutation_input():
    document = baseline()
    evidence(document)["sessionRefs"] = ["b", " a ", "", "b"]
    evidence(document)["trajectoryRefs"] = ["traj://1"]
    output = evaluate_join_check(document)
    assert output["normalized"]["sessionRefs"] == ["a", "b"]
    assert output["witness"]["mutationInput"]["sessionRefs"] == ["a", "b"]
    assert output["witness"]["mutationInput"]["trajectoryRefs"] == ["traj://1"]


def test_output_document_is_stable_bytes():
    output = evaluate_join_check(baseline())
    assert stdout_bytes(output) == stdout_bytes(evaluate_join_check(baseline()))


def test_library_refusal_raises_invalid_usage_only_for_unevaluable_input():
    document = baseline()
    evidence(document)["toolUse"][0]["disposition"] = "retry_scheduled"
    with pytest.raises(InvalidUsage) as caught:
        evaluate_join_check(document)
    assert caught.value.exit_code == 2
    assert caught.value.message == (
        "harness_join_check_invalid: toolUse[].disposition invalid: unsupported value "
        "`retry_scheduled` (expected consumed|observed|discarded)"
    )


def test_lowercasing_is_ascii_only():
    """Rust's `to_ascii_lowercase`: `É` stays upper-case, so `ÉND_TURN` is not a stop reason."""
    document = baseline()
    evidence(document)["callSpec"]["actionMode"] = "CÓDE"
    evidence(document)["protocolState"]["stopReason"] = "ÉND_TURN"
    output = evaluate_join_check(document)
    assert output["normalized"]["callSpec"]["actionMode"] == "cÓde"
    assert output["normalized"]["protocolState"]["stopReason"] == "Énd_turn"
    assert output["failureClasses"] == ["protocol.stop_reason_unhandled"]
