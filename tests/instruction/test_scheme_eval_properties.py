"""Property: no program gets a denied or unevidenced mutation accepted, and every executed
call has exactly one envelope and one trajectory row (agent-surface.md §3.5, §3.8).

Runs the evaluator in-process on random programs over a real issues file and trajectory.
Evidenced lease calls reach the transport; where that package is absent they are left out.
"""

import importlib.util
import json
from datetime import UTC, datetime
from pathlib import Path

import orjson
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from premath.harness.host.context import HostContext
from premath.harness.host.contract import BUILTIN_CONTRACT_PATH
from premath.harness.host.evaluate import (
    ACTION_CLAIMS,
    ALL_MUTATIONS_CLAIM,
    MUTATION_CLAIM,
    EvalOptions,
    evaluate_program,
)
from premath.harness.host.extension import BUILTIN_EXTENSION_PATH
from premath.harness.host.startup import StartupError
from tests.instruction.host_support import claim

HAVE_TRANSPORT = importlib.util.find_spec("premath.transport") is not None
POLICY_DIGEST = "pol1_4ba916ce38da5c5607eb7f41d963294b34b644deb1fa6d55e133b072ca001b39"
NOW = datetime(2026, 3, 1, tzinfo=UTC)
ISSUES = (
    b'{"id":"bd-1","title":"One","status":"open","priority":1,"issue_type":"task",'
    b'"created_at":"2026-02-22T00:00:00Z","updated_at":"2026-02-22T00:00:00Z","ephemeral":false}\n'
    b'{"id":"bd-2","title":"Two","status":"open","priority":2,"issue_type":"task",'
    b'"created_at":"2026-02-22T00:00:00Z","updated_at":"2026-02-22T00:00:00Z","ephemeral":false}\n'
)
DENIED = st.builds(
    lambda prefix, rest: prefix + rest,
    st.sampled_from(["shell.", "Network.", "HTTP.", "exec.", "SHELL."]),
    st.sampled_from(["exec", "fetch", "get", "run"]),
)
OTHER = st.sampled_from(
    ["issue.ready", "issue.list", "issue.blocked", "dep.diagnostics", "issue.update", "foo.bar"]
)
MUTATIONS = st.sampled_from(sorted(ACTION_CLAIMS))
EXTENSION_ARGS = {  # premath's contract extension (D24-1): instruction-linked mutations
    "issue.update": {"id": "bd-1", "notes": "n"},
    "dep.add": {"issueId": "bd-1", "dependsOnId": "bd-2", "depType": "related"},
    "harness.feature.write": {"featureId": "f", "status": "pending"},
    "harness.trajectory.append": {"action": "a", "resultClass": "ok"},
}
EXTENSION_MUTATIONS = st.sampled_from(sorted(EXTENSION_ARGS))
EXTENSION_CLAIMS = [claim(action) for action in EXTENSION_ARGS]
CLAIMS = st.lists(
    st.sampled_from(
        [MUTATION_CLAIM, ALL_MUTATIONS_CLAIM, *ACTION_CLAIMS.values(), *EXTENSION_CLAIMS, "x.other"]
    ),
    max_size=3,
)


@st.composite
def calls(draw):
    action = draw(st.one_of(DENIED, OTHER, MUTATIONS, EXTENSION_MUTATIONS))
    call = {"action": action, "capabilityClaims": draw(CLAIMS)}
    if action in ACTION_CLAIMS:
        call["args"] = {"id": "bd-1", "assignee": "ann", "leaseTtlSeconds": 300}
    if action in EXTENSION_ARGS:
        call["args"] = EXTENSION_ARGS[action]
        if draw(st.booleans()):  # often fully evidenced, so the gate's own checks decide
            call["capabilityClaims"] = [MUTATION_CLAIM, claim(action)]
            call.update(policyDigest=POLICY_DIGEST, instructionRef="instructions/i.json")
            return call
    for key, value in (("policyDigest", POLICY_DIGEST), ("instructionRef", "instructions/i.json")):
        if draw(st.booleans()):
            call[key] = value
    return call


def evidenced_extension(call, witness_claims) -> bool:
    """Declared evidence, and a witness that authorises this very action."""
    claims, wanted = set(call["capabilityClaims"]), claim(call["action"])
    return (
        "policyDigest" in call
        and "instructionRef" in call
        and MUTATION_CLAIM in claims
        and bool({wanted, ALL_MUTATIONS_CLAIM} & claims)
        and MUTATION_CLAIM in witness_claims
        and bool({wanted, ALL_MUTATIONS_CLAIM} & set(witness_claims))
    )


def evidenced(call, mcp_only) -> bool:
    claims = set(call["capabilityClaims"])
    return (
        call["action"] in ACTION_CLAIMS
        and call["action"] not in mcp_only
        and "policyDigest" in call
        and "instructionRef" in call
        and MUTATION_CLAIM in claims
        and bool({ACTION_CLAIMS[call["action"]], ALL_MUTATIONS_CLAIM} & claims)
    )


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    program=st.lists(calls(), min_size=1, max_size=6),
    mcp_only_leases=st.booleans(),
    witness_claims=st.one_of(
        st.just([MUTATION_CLAIM, ALL_MUTATIONS_CLAIM]),
        st.lists(
            st.sampled_from([MUTATION_CLAIM, ALL_MUTATIONS_CLAIM, *EXTENSION_CLAIMS]), max_size=3
        ),
    ),
)
def test_only_evidenced_mutations_are_accepted_each_with_one_row(
    tmp_path_factory, program, mcp_only_leases, witness_claims
):
    mcp_only = {"issue.lease_renew", "issue.lease_release"} if mcp_only_leases else set()
    assume(HAVE_TRANSPORT or not any(evidenced(call, mcp_only) for call in program))
    root: Path = tmp_path_factory.mktemp("prog")
    contract = json.loads(BUILTIN_CONTRACT_PATH.read_text())
    contract["hostActionSurface"]["mcpOnlyHostActions"] = sorted(mcp_only)
    (root / "contract.json").write_text(json.dumps(contract))
    (root / "prog.json").write_text(json.dumps({"calls": program}))
    (root / ".premath").mkdir()
    (root / ".premath" / "issues.jsonl").write_bytes(ISSUES)
    witness = {
        "instructionId": "i",
        "verdictClass": "accepted",
        "policyDigest": POLICY_DIGEST,
        "capabilityClaims": witness_claims,
        "joinClosed": True,
    }
    (root / "artifacts" / "ciwitness").mkdir(parents=True)
    (root / "artifacts" / "ciwitness" / "i.json").write_text(json.dumps(witness))
    trajectory = root / "traj.jsonl"
    options = EvalOptions(
        program_path=str(root / "prog.json"),
        contract_path=str(root / "contract.json"),
        extension_path=str(BUILTIN_EXTENSION_PATH),
        context=HostContext(trajectory_path=str(trajectory)),
    )
    import os

    cwd = os.getcwd()
    os.chdir(root)
    try:
        document = evaluate_program(options, now=lambda: NOW, lock_timeout=2.0)
    except StartupError:
        raise AssertionError("a non-empty program within budget always starts") from None
    finally:
        os.chdir(cwd)
    effects = document["effects"]
    rows = [orjson.loads(line) for line in trajectory.read_bytes().splitlines()]
    rows = [row for row in rows if row["action"].startswith("scheme_eval.")]  # not appended ones
    assert [row["stepId"] for row in rows] == [e["trajectoryRow"]["stepId"] for e in effects]
    assert all(e["resultClass"] == "accepted" for e in effects[:-1])
    assert len(effects) == len(program) or effects[-1]["resultClass"] != "accepted"
    for call, effect, row in zip(program, effects, rows, strict=False):
        accepted = effect["resultClass"] == "accepted"
        assert row["resultClass"] == effect["resultClass"]
        if call["action"].lower().startswith(("shell.", "network.", "http.", "exec.")):
            assert effect["resultClass"] == "scheme_eval.effect_denied"
        if call["action"] in ACTION_CLAIMS and accepted:
            assert evidenced(call, mcp_only)
            assert row["instructionRefs"] == ["instructions/i.json"]
        if call["action"] in EXTENSION_ARGS:
            event(f"{call['action']} {effect['resultClass']}")
            if accepted:
                assert evidenced_extension(call, witness_claims)
    mutated = any(
        e["resultClass"] == "accepted" and call["action"] in {*ACTION_CLAIMS, *EXTENSION_ARGS}
        for call, e in zip(program, effects, strict=False)
    )
    if not mutated:
        assert (root / ".premath" / "issues.jsonl").read_bytes() == ISSUES
