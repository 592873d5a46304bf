"""Input the join check cannot evaluate: exit 2 material, with the reference's message prefixes
(typestate.md §1, §3.9) and serde's rules for types, defaults and duplicates (§2)."""

from pathlib import Path
from typing import Any

import orjson
import pytest

from premath.errors import InvalidUsage
from premath.harness.join.check import evaluate_join_check, run_join_check
from tests.harness.join_check_inputs import baseline, evidence

PARSE = "harness_join_check_invalid: failed to parse input json input.json: "
INVALID = "harness_join_check_invalid: "


def _refusal(data: bytes) -> str:
    Path("input.json").write_bytes(data)
    with pytest.raises(InvalidUsage) as caught:
        run_join_check("input.json")
    return caught.value.message


def _changed(change) -> bytes:
    document = baseline()
    change(document)
    return orjson.dumps(document)


SHAPE_ERRORS: list[tuple[str, Any, str]] = [
    ("evidence missing", lambda d: d.pop("evidence"), "missing field `evidence`"),
    (
        "evidence null",
        lambda d: d.update(evidence=None),
        "invalid type: null, expected struct TypestateEvidenceInput",
    ),
    (
        "callSpec field missing",
        lambda d: evidence(d)["callSpec"].pop("normalizerId"),
        "missing field `normalizerId`",
    ),
    (
        "toolRequests null",
        lambda d: evidence(d).update(toolRequests=None),
        "invalid type: null, expected a sequence",
    ),
    (
        "retryable is a string",
        lambda d: evidence(d)["toolResults"][0].update(retryable="yes"),
        'invalid type: string "yes", expected a boolean',
    ),
    (
        "toolName is a number",
        lambda d: evidence(d)["toolRequests"][0].update(toolName=5),
        "invalid type: integer `5`, expected a string",
    ),
    (
        "disposition missing",
        lambda d: evidence(d)["toolUse"][0].pop("disposition"),
        "missing field `disposition`",
    ),
    (
        "continuationAllowed null",
        lambda d: evidence(d)["protocolState"].update(continuationAllowed=None),
        "invalid type: null, expected a boolean",
    ),
    (
        "governance profile without claimed",
        lambda d: d.update(governanceProfile={"claimId": "x"}),
        "missing field `claimed`",
    ),
    (
        "provenance without pinned",
        lambda d: d.update(governanceProfile={"claimed": True, "policyProvenance": {}}),
        "missing field `pinned`",
    ),
    (
        "handoff refs hold a number",
        lambda d: evidence(d)["handoff"].update(requiredArtifactRefs=[1.5]),
        "invalid type: floating point `1.5`, expected a string",
    ),
    (
        "sessionRefs is an object",
        lambda d: evidence(d).update(sessionRefs={}),
        "invalid type: map, expected a sequence",
    ),
]


@pytest.mark.parametrize(
    ("change", "message"),
    [pytest.param(change, message, id=name) for name, change, message in SHAPE_ERRORS],
)
def test_shape_errors_are_parse_failures(change, message, workdir):
    assert _refusal(_changed(change)) == PARSE + message


NORMALISATION_ERRORS: list[tuple[str, Any, str]] = [
    (
        "blank call id",
        lambda d: evidence(d)["callSpec"].update(callId="  "),
        "callSpec.callId must be non-empty",
    ),
    (
        "blank tool name",
        lambda d: evidence(d)["toolRequests"][0].update(toolName="\t"),
        "toolRequests[].toolName must be non-empty",
    ),
    (
        "unknown status, lowercased in the message",
        lambda d: evidence(d)["toolResults"][0].update(status=" PENDING "),
        "toolResults[].status invalid: unsupported value `pending` (expected `ok` or `error`)",
    ),
    (
        "bad status is reported before a blank id",
        lambda d: evidence(d)["toolResults"][0].update(status="x", toolCallId=""),
        "toolResults[].status invalid: unsupported value `x` (expected `ok` or `error`)",
    ),
    (
        "disposition is checked before the id",
        lambda d: evidence(d)["toolUse"][0].update(disposition="observed_only", toolCallId=""),
        "toolUse[].disposition invalid: unsupported value `observed_only` "
        "(expected consumed|observed|discarded)",
    ),
    (
        "blank disposition",
        lambda d: evidence(d)["toolUse"][0].update(disposition=" "),
        "toolUse[].disposition must be non-empty",
    ),
    (
        "blank injection point",
        lambda d: evidence(d)["toolRender"][0].update(injectionPoint=""),
        "toolRender[].injectionPoint must be non-empty",
    ),
    (
        "blank queue id",
        lambda d: evidence(d)["reminderQueue"][0].update(queueId=""),
        "reminderQueue[].queueId must be non-empty",
    ),
    (
        "blank view id",
        lambda d: evidence(d)["stateViews"][0].update(viewId=""),
        "stateViews[].viewId must be non-empty",
    ),
    (
        "blank stop reason",
        lambda d: evidence(d)["protocolState"].update(stopReason=" "),
        "protocolState.stopReason must be non-empty",
    ),
    (
        "blank handoff target",
        lambda d: evidence(d)["handoff"].update(target=""),
        "handoff.target must be non-empty",
    ),
    (
        "conflicting duplicate request",
        lambda d: evidence(d)["toolRequests"].append({"toolCallId": "tc-1", "toolName": "x"}),
        "toolRequests contains conflicting duplicate toolCallId: tc-1",
    ),
    (
        "conflicting duplicate queue row says toolCallId too",
        lambda d: evidence(d)["reminderQueue"].append(
            {"queueId": "queue/default", "reducedDigest": "other", "policyDigest": "p"}
        ),
        "reminderQueue contains conflicting duplicate toolCallId: queue/default",
    ),
    (
        "conflicting duplicate state view",
        lambda d: evidence(d)["stateViews"].append(
            {"viewId": "state/latest", "viewDigest": "v2", "policyDigest": "state.pol.v1"}
        ),
        "stateViews contains conflicting duplicate toolCallId: state/latest",
    ),
]


@pytest.mark.parametrize(
    ("change", "message"),
    [pytest.param(change, message, id=name) for name, change, message in NORMALISATION_ERRORS],
)
def test_normalisation_errors(change, message, workdir):
    assert _refusal(_changed(change)) == INVALID + message


def test_unreadable_and_malformed_files(workdir):
    with pytest.raises(InvalidUsage) as caught:
        run_join_check("absent.json")
    assert caught.value.message == (
        "harness_join_check_invalid: failed to read input absent.json: "
        "No such file or directory (os error 2)"
    )
    assert _refusal(b"") == PARSE + "EOF while parsing a value"
    for data in (b"{", b"[1,", b'{"a": NaN}', b'"\\ud800"', b"\xff", b"{} x", b"1e400"):
        assert _refusal(data).startswith(PARSE), data
    assert _refusal(b"[]") == PARSE + "invalid type: sequence, expected struct JoinCheckInput"


def test_a_folder_is_unreadable(workdir):
    Path("folder").mkdir()
    with pytest.raises(InvalidUsage) as caught:
        run_join_check("folder")
    assert caught.value.message.startswith(
        "harness_join_check_invalid: failed to read input folder: "
    )


def test_repeated_struct_field_is_refused_as_serde_does(workdir):
    data = orjson.dumps(baseline()).replace(
        b'"callId":"call-1"', b'"callId":"call-1","callId":"call-2"'
    )
    assert _refusal(data) == PARSE + "duplicate field `callId`"


def test_unknown_keys_are_ignored_everywhere():
    document = baseline()
    document["extra"] = {"anything": [1, 2]}
    evidence(document)["callSpec"]["extra"] = 1
    evidence(document)["toolRequests"][0]["extra"] = None
    assert evaluate_join_check(document) == evaluate_join_check(baseline())


def test_explicit_nulls_are_absent_for_optional_fields():
    document = baseline()
    document.update(
        governanceProfile=None,
        protocolConstraints=None,
        handoffConstraints=None,
        truncationConstraints=None,
        decompositionConstraints=None,
    )
    evidence(document)["toolRequests"][0].update(schemaDigest=None, callerId=None)
    evidence(document)["toolResults"][0].update(payload=None, rawError=None, retryable=None)
    evidence(document)["handoff"].update(returnPathRef=None)
    output = evaluate_join_check(document)
    assert output["result"] == "accepted"
    assert "returnPathRef" not in output["normalized"]["handoff"]
