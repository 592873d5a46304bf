"""The host actions premath's contract extension binds: each read and each instruction-linked
mutation accepted with its evidence, and refused (typed class, nothing changed) without it."""

import json
import os
import shutil
from pathlib import Path

import orjson
import pytest

from premath.clock import FrozenClock
from premath.harness.host.contract import BUILTIN_CONTRACT_PATH
from premath.harness.host.extension import BUILTIN_EXTENSION_PATH, EXTENSION_PATH
from premath.harness.host.program import Bindings
from premath.mcp.tools import ServerConfig, ToolRefused, ToolService
from tests.harness.loop_support import make_issues
from tests.instruction.host_support import (
    ALL_CLAIMS,
    CHANGE,
    NOW,
    accepted_instruction,
    claim,
    evaluate,
    evidence,
    host_repo,
    program,
    rows,
    write_envelope,
)
from tests.support.observation import ALIAS, TYPED, seed_project

POLICY_TEST = "pol1_1ab3e7f398a472c2cf0f3fbd7ead7ece7bd74e836cbde924f1e33f02895d18ab"


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    host_repo(tmp_path)
    make_issues(tmp_path, ["bd-1", "bd-2"])
    return tmp_path


def store(root: Path) -> dict[str, dict]:
    lines = (root / ".premath" / "issues.jsonl").read_bytes().splitlines()
    return {row["id"]: row for row in map(orjson.loads, lines) if row}


def only_effect(document: dict) -> dict:
    (effect,) = document["effects"]
    return effect


# --- reads -------------------------------------------------------------------------------------


def test_issue_show_reads_the_calls_issue_by_default(repo):
    program(repo, {"action": "issue.show"}, {"action": "issue.show", "args": {"id": "bd-2"}})
    document = evaluate(repo, bindings=Bindings(issue_id="bd-1"))
    assert document["result"] == "accepted"
    shown = [effect["payload"]["issue"]["id"] for effect in document["effects"]]
    assert shown == ["bd-1", "bd-2"]  # reading another issue is not a mutation: allowed
    program(repo, {"action": "issue.show"})
    refused = only_effect(evaluate(repo))
    assert refused["resultClass"] == "scheme_eval.invalid_program"
    assert refused["payload"]["diagnostic"] == "invalid issue.show args: missing field `id`"


@pytest.mark.parametrize(
    ("action", "args", "found"),
    [
        ("observe.latest", {}, True),
        ("observe.needs_attention", {}, True),
        ("observe.instruction", {"instructionId": "20260222T010000Z-ci-wiring"}, True),
        ("observe.instruction", {"instructionId": "nope"}, False),
        ("observe.projection", {"projectionDigest": TYPED}, True),
        (
            "observe.projection",
            {"projectionDigest": ALIAS, "projectionMatch": "compatibility_alias"},
            True,
        ),
        ("observe.projection", {"projectionDigest": ALIAS}, False),
    ],
)
def test_observe_actions_answer_exactly_as_the_mcp_tools(
    tmp_path, monkeypatch, action, args, found
):
    from tests.support.cli import invoke

    monkeypatch.chdir(tmp_path)
    seed_project(tmp_path)
    assert invoke("observe-build", "--json").exit_code == 0
    tool = getattr(ToolService(ServerConfig(), FrozenClock(NOW)), action.replace(".", "_"))
    program(tmp_path, {"action": action, "args": args})
    effect = only_effect(evaluate(tmp_path))
    try:
        expected = ("accepted", tool(args))
    except ToolRefused as refused:
        expected = ("scheme_eval.host_action_execution_error", refused.message)
    payload = effect["payload"]
    answer = payload if effect["resultClass"] == "accepted" else payload["diagnostic"]
    assert (effect["resultClass"], answer) == expected
    assert (expected[0] == "accepted") == found


def test_observe_without_a_surface_says_it_is_missing(repo):
    program(repo, {"action": "observe.latest"})
    effect = only_effect(evaluate(repo))
    assert effect["resultClass"] == "scheme_eval.host_action_execution_error"
    assert (
        "failed to load observation surface at artifacts/observation/latest.json"
        in (effect["payload"]["diagnostic"])
    )


def test_instruction_check_is_the_envelope_or_its_failure_class(repo):
    ref = accepted_instruction(repo, "20260301T000000Z-check", ALL_CLAIMS)
    (repo / "instructions" / "20260301T000001Z-bad.json").write_text('{"schema": 1}')
    program(repo, {"action": "instruction.check", "args": {"instructionPath": ref}})
    effect = only_effect(evaluate(repo))
    assert effect["resultClass"] == "accepted"
    assert effect["payload"]["envelope"]["policyDigest"].startswith("pol1_")
    bad = "instructions/20260301T000001Z-bad.json"
    program(repo, {"action": "instruction.check", "args": {"instructionPath": bad}})
    effect = only_effect(evaluate(repo))
    assert effect["resultClass"] == "instruction_invalid_intent"


# --- mutations ---------------------------------------------------------------------------------

MUTATIONS = [
    ("issue.update", {"notes": "progress"}),
    ("issue.discover", {"title": "Follow-up"}),
    ("dep.add", {"dependsOnId": "bd-2", "depType": "related"}),
    ("harness.session.write", {"state": "active", "summary": "working"}),
    ("harness.feature.write", {"status": "in_progress", "summary": "drafted"}),
    ("harness.trajectory.append", {"action": "work.note", "resultClass": "completed"}),
]


@pytest.mark.parametrize(("action", "args"), MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_each_mutation_is_accepted_with_its_instruction_evidence(repo, action, args):
    ref = accepted_instruction(repo, "20260301T000000Z-work", [CHANGE, claim(action)])
    program(repo, {"action": action, "args": args}, **evidence(ref, claim(action)))
    document = evaluate(repo, bindings=Bindings(issue_id="bd-1"))
    effect = only_effect(document)
    assert effect["resultClass"] == "accepted", effect["payload"]
    link = effect["payload"]["instruction"]
    assert (link["instructionId"], link["policyDigest"]) == (
        "20260301T000000Z-work",
        evidence(ref)["policyDigest"],
    )
    assert len(rows(repo / "traj.jsonl")) == 1 + (action == "harness.trajectory.append")
    if action.startswith(("issue.", "dep.")):
        written = effect["payload"]["writeWitness"]
        target = effect["payload"].get("issue", {}).get("id", "bd-1")
        stored = store(repo)[target]["metadata"]["premathWriteWitness"]
        assert stored == written
        assert written["mutationPolicy"] == "instruction-linked"


def test_dep_remove_and_replace_change_the_bound_issues_edge(repo):
    ref = accepted_instruction(repo, "20260301T000000Z-deps", ALL_CLAIMS)
    calls = [
        {"action": "dep.add", "args": {"dependsOnId": "bd-2"}},
        {"action": "dep.replace", "args": {"dependsOnId": "bd-2", "toDepType": "related"}},
        {"action": "dep.remove", "args": {"dependsOnId": "bd-2", "depType": "related"}},
    ]
    program(repo, *calls, **evidence(ref, f"{CHANGE}.all"))
    document = evaluate(repo, bindings=Bindings(issue_id="bd-1"))
    assert [e["resultClass"] for e in document["effects"]] == ["accepted"] * 3
    assert document["effects"][1]["payload"]["dependency"]["toType"] == "related"
    assert store(repo)["bd-1"].get("dependencies", []) == []


def test_instruction_run_runs_the_pipeline_and_rejects_with_the_witness_classes(repo, monkeypatch):
    bin_dir = repo / "bin"
    bin_dir.mkdir()
    (bin_dir / "mise").write_text('#!/bin/sh\n[ "$2" = ci-wiring-check ]\n')
    os.chmod(bin_dir / "mise", 0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    ref = accepted_instruction(repo, "20260301T000000Z-runner", [CHANGE, claim("instruction.run")])
    target = write_envelope(repo, "20260301T000001Z-target", ALL_CLAIMS)
    run_target = {"action": "instruction.run", "args": {"instructionPath": target}}
    program(repo, run_target, **evidence(ref, claim("instruction.run")))
    effect = only_effect(evaluate(repo))
    assert effect["resultClass"] == "accepted", effect["payload"]
    assert effect["payload"]["verdictClass"] == "accepted"
    # The accepted witness is that run's own: running the envelope again is refused (D22-4).
    effect = only_effect(evaluate(repo))
    assert effect["failureClasses"] == ["witness.overwrite_refused"]
    failing = write_envelope(repo, "20260301T000002Z-failing", ALL_CLAIMS, check="conformance-run")
    run_failing = {"action": "instruction.run", "args": {"instructionPath": failing}}
    program(repo, run_failing, **evidence(ref, claim("instruction.run")))
    effect = only_effect(evaluate(repo))
    assert (effect["resultClass"], effect["failureClasses"]) == ("check_failed", ["check_failed"])


# --- refusals: a typed class, nothing mutated past the first refused call ---------------------


def _refused(repo: Path, call: dict, **program_fields) -> dict:
    before = (repo / ".premath" / "issues.jsonl").read_bytes()
    program(repo, call, {"action": "issue.update", "args": {"notes": "after"}}, **program_fields)
    document = evaluate(repo, bindings=Bindings(issue_id="bd-1"))
    assert document["result"] == "rejected"
    assert document["executedCallCount"] == 1
    assert len(rows(repo / "traj.jsonl")) == 1
    assert (repo / ".premath" / "issues.jsonl").read_bytes() == before
    return only_effect(document)


def test_a_mutation_without_evidence_is_refused(repo):
    effect = _refused(repo, {"action": "issue.update", "args": {"notes": "x"}})
    assert effect["resultClass"] == "mutation.use_evidence_missing"


def test_a_mutation_without_its_capability_claim_is_refused(repo):
    ref = accepted_instruction(repo, "20260301T000000Z-a", ALL_CLAIMS)
    call = {"action": "issue.update", "args": {"notes": "x"}}
    effect = _refused(repo, call, **evidence(ref, claim("issue.discover")))
    assert effect["resultClass"] == "mutation.capability_claim_missing"
    assert "capabilities.change_morphisms.issue_update" in effect["payload"]["diagnostic"]


def test_evidence_for_another_action_is_refused_by_the_mcp_gate(repo):
    ref = accepted_instruction(repo, "20260301T000000Z-other", [CHANGE, claim("issue.discover")])
    call = {"action": "issue.update", "args": {"notes": "x"}}
    effect = _refused(repo, call, **evidence(ref, claim("issue.update")))
    assert effect["resultClass"] == "mutation.instruction_witness_rejected"
    assert "missing required action capability claim" in effect["payload"]["diagnostic"]


def test_evidence_for_another_issue_is_refused(repo):
    ref = accepted_instruction(repo, "20260301T000000Z-b", ALL_CLAIMS)
    call = {"action": "issue.update", "args": {"id": "bd-2", "notes": "x"}}
    effect = _refused(repo, call, **evidence(ref, claim("issue.update")))
    assert effect["resultClass"] == "mutation.issue_binding_mismatch"


@pytest.mark.parametrize(
    ("witness", "expected"),
    [
        ("missing", "mutation.instruction_witness_rejected"),
        ("rejected", "mutation.instruction_witness_rejected"),
        ("no-join", "mutation.use_evidence_missing"),
        ("other-policy", "mutation.policy_digest_mismatch"),
    ],
)
def test_a_witness_that_does_not_authorise_the_mutation_refuses_it(repo, witness, expected):
    name = "20260301T000000Z-w"
    if witness != "missing":
        accepted_instruction(
            repo, name, ALL_CLAIMS, join=witness != "no-join", accepted=witness != "rejected"
        )
    fields = evidence(f"instructions/{name}.json", claim("issue.update"))
    if witness == "other-policy":
        fields["policyDigest"] = POLICY_TEST
    effect = _refused(repo, {"action": "issue.update", "args": {"notes": "x"}}, **fields)
    assert effect["resultClass"] == expected


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"notes": 3}, "scheme_eval.invalid_program"),
        ({"priority": "high"}, "scheme_eval.invalid_program"),
        ({"notes": "x", "issuesPath": "../outside.jsonl"}, "path.outside_root"),
        (
            {"notes": "x", "issuesPath": "https://example.invalid/i.jsonl"},
            "scheme_eval.effect_denied",
        ),
        ({"notes": "x", "issuesPath": "/dev/tcp/127.0.0.1/9"}, "scheme_eval.effect_denied"),
        ({"notes": "x", "issuesPath": "| sh -c id"}, "scheme_eval.effect_denied"),
        ({"notes": "x", "issuesPath": "$(id).jsonl"}, "scheme_eval.effect_denied"),
        ({"notes": "x", "issuesPath": "fifo"}, "path.not_regular_file"),
    ],
)
def test_bad_arguments_and_escaping_paths_are_refused(repo, args, expected):
    os.mkfifo(repo / "fifo")
    ref = accepted_instruction(repo, "20260301T000000Z-c", ALL_CLAIMS)
    effect = _refused(
        repo, {"action": "issue.update", "args": args}, **evidence(ref, claim("issue.update"))
    )
    assert effect["resultClass"] == expected


def test_a_read_through_a_path_is_confined_too(repo):
    os.symlink("/etc", repo / "etc-link")
    program(repo, {"action": "issue.ready", "args": {"issuesPath": "etc-link/passwd"}})
    effect = only_effect(evaluate(repo))
    assert effect["resultClass"] == "path.outside_root"


def test_a_call_past_the_deadline_is_refused_and_stops_the_program(repo):
    from premath.harness.host.context import HostContext

    program(repo, {"action": "issue.ready"}, {"action": "issue.ready"})
    context = HostContext(
        repo_root=str(repo), trajectory_path=str(repo / "traj.jsonl"), deadline=0.0
    )
    document = evaluate(repo, context=context)
    assert [e["resultClass"] for e in document["effects"]] == ["scheme_eval.deadline_exceeded"]


# --- which contract binds the added actions ----------------------------------------------------


def test_a_repository_with_only_the_references_contract_keeps_the_references_behaviour(
    cli_run, workdir
):
    host_repo(workdir)
    make_issues(workdir, ["bd-1"])
    contract = workdir / "specs" / "premath" / "draft" / "CONTROL-PLANE-CONTRACT.json"
    contract.parent.mkdir(parents=True)
    shutil.copy(BUILTIN_CONTRACT_PATH, contract)
    ref = accepted_instruction(workdir, "20260301T000000Z-r", ALL_CLAIMS)
    call = {"action": "issue.update", "args": {"id": "bd-1", "notes": "n"}}
    program(workdir, call, **evidence(ref, f"{CHANGE}.all"))
    result = cli_run("scheme-eval", "--program", "prog.json", "--json")
    assert result.json["effects"][0]["resultClass"] == "scheme_eval.host_action_unallowlisted"
    assert len(result.json["allowlistedActions"]) == 15
    assert "contractExtension" not in result.json
    (workdir / EXTENSION_PATH).parent.mkdir(parents=True)
    shutil.copy(BUILTIN_EXTENSION_PATH, workdir / EXTENSION_PATH)
    result = cli_run("scheme-eval", "--program", "prog.json", "--json")
    assert result.json["contractExtension"]["path"] == EXTENSION_PATH
    assert result.json["effects"][0]["resultClass"] == "accepted"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(policyId="other"), "policyDigest mismatch"),
        (lambda d: d["hostActions"]["issue.update"].update(effect="read"), "must be `mutation`"),
        (lambda d: d["hostActions"].update({"shell.exec": {}}), "does not implement"),
    ],
)
def test_a_tampered_extension_refuses_to_start(cli_run, workdir, change, message):
    from premath.harness.retry import policy_digest

    document = json.loads(BUILTIN_EXTENSION_PATH.read_text())
    change(document)
    if "mismatch" not in message:
        document["policyDigest"] = policy_digest(document)
    (workdir / "ext.json").write_text(json.dumps(document))
    program(workdir, {"action": "issue.ready"})
    result = cli_run("scheme-eval", "--program", "prog.json", "--contract-extension", "ext.json")
    assert (result.exit_code, result.stdout) == (1, "")
    assert "scheme_eval.contract_extension_invalid" in result.stderr
    assert message in result.stderr
    assert not (workdir / ".premath").exists()


def test_the_shipped_extension_is_the_repositorys_policy():
    repo_copy = Path(__file__).resolve().parents[2] / EXTENSION_PATH
    assert repo_copy.read_bytes() == BUILTIN_EXTENSION_PATH.read_bytes()


ALL_MUTATIONS = [
    *MUTATIONS,
    ("dep.remove", {"dependsOnId": "bd-2"}),
    ("dep.replace", {"dependsOnId": "bd-2", "toDepType": "related"}),
    ("instruction.run", {"instructionPath": "instructions/20260301T000000Z-other.json"}),
]


def tree(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.name not in ("traj.jsonl", "prog.json")
    }


@pytest.mark.parametrize(("action", "args"), ALL_MUTATIONS, ids=[m[0] for m in ALL_MUTATIONS])
def test_each_mutation_is_refused_without_evidence_or_with_another_actions(repo, action, args):
    other = "issue.discover" if action != "issue.discover" else "issue.update"
    ref = accepted_instruction(repo, "20260301T000000Z-other", [CHANGE, claim(other)])
    before = tree(repo)
    program(repo, {"action": action, "args": args})
    assert only_effect(evaluate(repo))["resultClass"] == "mutation.use_evidence_missing"
    program(repo, {"action": action, "args": args}, **evidence(ref, claim(action)))
    refused = only_effect(evaluate(repo, bindings=Bindings(issue_id="bd-1")))
    assert refused["resultClass"] == "mutation.instruction_witness_rejected"
    assert (
        f"missing required action capability claim `{claim(action)}`"
        in (refused["payload"]["diagnostic"])
    )
    assert tree(repo) == before  # nothing written but the two effect rows
    assert len(rows(repo / "traj.jsonl")) == 2


@pytest.mark.parametrize(
    ("action", "args"),
    [
        ("observe.needs_attention", {}),
        ("observe.instruction", {"instructionId": "i-1"}),
        ("observe.projection", {"projectionDigest": "ev1_x", "projectionMatch": "nearby"}),
        ("issue.show", {"id": "bd-404"}),
        ("instruction.check", {"instructionPath": "instructions/missing.json"}),
    ],
)
def test_each_read_is_refused_with_its_class(repo, action, args):
    program(repo, {"action": action, "args": args})
    effect = only_effect(evaluate(repo))
    expected = {
        "observe.projection": "scheme_eval.invalid_program",
        "instruction.check": "instruction_envelope_invalid",
    }.get(action, "scheme_eval.host_action_execution_error")
    assert effect["resultClass"] == expected
