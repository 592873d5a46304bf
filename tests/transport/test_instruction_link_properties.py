"""The instruction gate and the MCP argument reader on arbitrary input: a typed refusal or an
answer, never another exception; a witness is accepted exactly when every check holds."""

import os
import tempfile

import orjson
from hypothesis import example, given
from hypothesis import strategies as st

from premath.mcp.catalogue import TOOLS
from premath.models.params import Reading, check_arguments
from premath.models.serde import SchemaViolation
from premath.store.witness_mac import ensure_keyring, new_run_id, sidecar_bytes
from premath.transport.instruction_link import (
    ALLOWED_POLICY_DIGESTS,
    GateRefused,
    Mutation,
    WitnessRules,
    resolve_instruction_link,
)

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
CLAIMS = ["capabilities.change_morphisms", "capabilities.change_morphisms.issue_claim", "x"]
WITNESS = st.fixed_dictionaries(
    {},
    optional={
        "instructionId": st.sampled_from(["i-1", "i-2", 3]),
        "verdictClass": st.sampled_from(["accepted", "rejected", None]),
        "policyDigest": st.sampled_from([*sorted(ALLOWED_POLICY_DIGESTS), "pol1_other", 7]),
        "capabilityClaims": st.lists(st.sampled_from(CLAIMS), max_size=3) | JSON,
        "failureClasses": st.lists(st.sampled_from(["", " ", "boom"]), max_size=2) | JSON,
        "joinClosed": JSON,
    },
)


def expected_accept(witness: dict) -> bool:
    claims = witness.get("capabilityClaims")
    claims = [c for c in claims if isinstance(c, str)] if isinstance(claims, list) else []
    failures = witness.get("failureClasses")
    failures = [f for f in failures if isinstance(f, str)] if isinstance(failures, list) else []
    return (
        witness.get("instructionId") == "i-1"
        and witness.get("verdictClass") == "accepted"
        and witness.get("policyDigest") in ALLOWED_POLICY_DIGESTS
        and "capabilities.change_morphisms" in claims
        and "capabilities.change_morphisms.issue_claim" in claims
        and not any(f.strip() for f in failures)
    )


ACCEPTED = {
    "instructionId": "i-1",
    "verdictClass": "accepted",
    "policyDigest": sorted(ALLOWED_POLICY_DIGESTS)[0],
    "capabilityClaims": CLAIMS[:2],
}


@given(WITNESS, st.booleans(), st.sampled_from(["mac", "reference"]))
@example(ACCEPTED, True, "mac")
@example(ACCEPTED, False, "mac")
@example(ACCEPTED, False, "reference")
def test_the_gate_accepts_exactly_the_witnesses_that_scope_the_mutation(witness, signed, trust):
    """Under trust `mac` only a witness with a valid MAC can pass (D22-3); under `reference`
    the file alone decides, as in the reference."""
    with tempfile.TemporaryDirectory() as root:
        folder = os.path.join(root, "artifacts", "ciwitness")
        os.makedirs(folder)
        data = orjson.dumps(witness)
        with open(os.path.join(folder, "i-1.json"), "wb") as handle:
            handle.write(data)
        if signed:
            with open(os.path.join(folder, "i-1.json.mac"), "wb") as handle:
                handle.write(sidecar_bytes(ensure_keyring().signing, new_run_id(), data))
        try:
            link = resolve_instruction_link(
                "instruction-linked",
                "i-1",
                root,
                Mutation("issue.claim"),
                rules=WitnessRules(trust=trust),
            )
        except GateRefused:
            assert not expected_accept(witness) or (trust == "mac" and not signed)
        else:
            assert expected_accept(witness)
            assert signed or trust == "reference"
            assert link.document is not None
            assert link.document["instructionId"] == "i-1"


@given(st.sampled_from(TOOLS), JSON)
def test_arguments_are_read_or_refused_with_serdes_text(tool, arguments):
    try:
        parsed = check_arguments(tool.fields, arguments, Reading(f"struct {tool.name}"))
    except SchemaViolation:
        return
    names = {field.name for field in tool.fields}
    assert set(parsed) <= names
