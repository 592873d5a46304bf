"""`harness boot` resolves every memory root with its state, and instruction witnesses steer
the next target only when the gate would honour them (scoped policy, claim capability)."""

from pathlib import Path

import orjson

from premath.models.instruction_witness import InstructionWitness
from tests.harness.loop_support import make_issues

POLICY_CI = "pol1_4ba916ce38da5c5607eb7f41d963294b34b644deb1fa6d55e133b072ca001b39"
CLAIMS = ["capabilities.change_morphisms", "capabilities.change_morphisms.issue_claim"]


def write_witness(root: Path, instruction_id: str, *, verdict="accepted", scope=None, **fields):
    witness = InstructionWitness.model_validate(
        {
            "instructionId": instruction_id,
            "instructionRef": f"instructions/{instruction_id}.json",
            "instructionDigest": "instr1_x",
            "instructionClassification": {"state": "typed", "kind": "ci.gate.check"},
            "typingPolicy": {"allowUnknown": False},
            "intent": "work on an issue",
            "scope": scope,
            "normalizerId": "normalizer.ci.v1",
            "policyDigest": fields.pop("policyDigest", POLICY_CI),
            "capabilityClaims": fields.pop("capabilityClaims", CLAIMS),
            "verdictClass": verdict,
            "failureClasses": [] if verdict == "accepted" else ["check_failed"],
            "squeakSiteProfile": "local",
            "runStartedAt": "2026-03-01T00:00:00Z",
            "runFinishedAt": "2026-03-01T00:00:01Z",
            "runDurationMs": 1000,
        }
    )
    directory = root / "artifacts" / "ciwitness"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{instruction_id}.json").write_bytes(
        orjson.dumps(witness.to_document(), option=orjson.OPT_INDENT_2) + b"\n"
    )


def roots(report):
    return {root["name"]: root for root in report["memoryRoots"]["roots"]}


def test_fresh_repository_reports_each_root_present_or_missing(cli_run, workdir):
    make_issues(workdir, ["bd-1"])
    report = cli_run("harness", "boot", "--json").json
    states = {name: root["state"] for name, root in roots(report).items()}
    assert states == {
        "issues": "present",
        "session": "missing",
        "featureLedger": "missing",
        "trajectory": "missing",
        "instructionWitnesses": "missing",
        "observation": "missing",
    }
    assert roots(report)["instructionWitnesses"]["path"] == "artifacts/ciwitness"
    assert roots(report)["observation"]["path"] == "artifacts/observation/latest.json"


def test_a_scoped_accepted_witness_bound_to_a_ready_issue_is_the_next_target(cli_run, workdir):
    make_issues(workdir, ["bd-1", "bd-2"])
    write_witness(workdir, "20260301T000000Z-work-bd-2", scope={"kind": "issue", "target": "bd-2"})
    report = cli_run("harness", "boot", "--json").json
    assert report["nextTarget"].pop("issue")["id"] == "bd-2"  # D16-3: the target issue whole
    assert report["nextTarget"] == {
        "issueId": "bd-2",
        "source": "instruction_witness",
        "featureId": None,
    }
    [latest] = roots(report)["instructionWitnesses"]["latestAccepted"]
    assert (latest["boundIssueId"], latest["mutationScoped"]) == ("bd-2", True)
    assert latest["path"] == "artifacts/ciwitness/20260301T000000Z-work-bd-2.json"


def test_witnesses_the_gate_would_refuse_do_not_steer(cli_run, workdir):
    make_issues(workdir, ["bd-1", "bd-2", "bd-3"])
    bd2 = {"kind": "issue", "target": "bd-2"}
    write_witness(workdir, "20260301T000000Z-a", scope=bd2, policyDigest="pol1_unscoped")
    write_witness(workdir, "20260301T000000Z-b", scope=bd2, capabilityClaims=CLAIMS[:1])
    write_witness(
        workdir, "20260301T000000Z-c", scope={"kind": "issue", "target": "bd-3"}, verdict="rejected"
    )
    report = cli_run("harness", "boot", "--json").json
    assert report["nextTarget"]["issueId"] == "bd-1"
    assert report["nextTarget"]["source"] == "ready"
    latest = roots(report)["instructionWitnesses"]["latestAccepted"]
    assert [(w["instructionId"], w["mutationScoped"]) for w in latest] == [
        ("20260301T000000Z-a", False),
        ("20260301T000000Z-b", False),
    ]


def test_only_the_latest_accepted_run_of_an_instruction_counts(cli_run, workdir):
    make_issues(workdir, ["bd-1", "bd-2"])
    write_witness(workdir, "20260301T000000Z-work", scope={"kind": "issue", "target": "bd-2"})
    write_witness(workdir, "20260302T000000Z-work", scope={"kind": "issue", "target": "bd-1"})
    write_witness(workdir, "20260303T000000Z-work", verdict="rejected")
    report = cli_run("harness", "boot", "--json").json
    latest = roots(report)["instructionWitnesses"]["latestAccepted"]
    assert [w["instructionId"] for w in latest] == ["20260302T000000Z-work"]
    assert roots(report)["instructionWitnesses"]["count"] == 3


def test_unreadable_witnesses_and_observation_are_invalid_with_why(cli_run, workdir):
    make_issues(workdir, ["bd-1"])
    write_witness(workdir, "20260301T000000Z-ok")
    (workdir / "artifacts" / "ciwitness" / "20260301T000000Z-torn.json").write_text('{"ciSchema"')
    (workdir / "artifacts" / "ciwitness" / "20260301T000000Z-shape.json").write_text('{"a": 1}')
    (workdir / "artifacts" / "observation").mkdir()
    (workdir / "artifacts" / "observation" / "latest.json").write_text("[1]")
    result = cli_run("harness", "boot", "--json")
    assert result.exit_code == 0
    witnesses = roots(result.json)["instructionWitnesses"]
    assert witnesses["state"] == "invalid"
    assert [w["path"] for w in witnesses["invalidWitnesses"]] == [
        "artifacts/ciwitness/20260301T000000Z-shape.json",
        "artifacts/ciwitness/20260301T000000Z-torn.json",
    ]
    assert "not JSON" in witnesses["invalidWitnesses"][1]["why"]
    assert [w["instructionId"] for w in witnesses["latestAccepted"]] == ["20260301T000000Z-ok"]
    observation = roots(result.json)["observation"]
    assert (observation["state"], observation["why"]) == (
        "invalid",
        "failed to parse observation surface JSON: invalid type: sequence, expected struct "
        "ObservationSurface at $",
    )


def test_a_witness_directory_that_is_a_file_and_a_present_observation(cli_run, workdir):
    make_issues(workdir, ["bd-1"])
    (workdir / "artifacts").mkdir()
    (workdir / "artifacts" / "ciwitness").write_text("x")
    assert cli_run("observe-build", "--ciwitness-dir", "nowhere").exit_code == 0
    report = cli_run("harness", "boot", "--json").json
    assert roots(report)["instructionWitnesses"]["state"] == "invalid"
    assert roots(report)["instructionWitnesses"]["why"] == "is a file, not a directory"
    assert roots(report)["observation"] == {
        "name": "observation",
        "path": "artifacts/observation/latest.json",
        "state": "present",
        "surface": {"state": "empty", "needsAttention": False, "topFailureClass": None},
    }


def test_a_surface_observe_would_refuse_is_an_invalid_root(cli_run, workdir):
    make_issues(workdir, ["bd-1"])
    (workdir / "artifacts" / "observation").mkdir(parents=True)
    (workdir / "artifacts" / "observation" / "latest.json").write_text('{"summary": {}}')
    observation = roots(cli_run("harness", "boot", "--json").json)["observation"]
    assert (observation["state"], observation["why"]) == (
        "invalid",
        "failed to parse observation surface JSON: missing field `schema` at $",
    )


def test_an_invalid_session_is_an_invalid_root(cli_run, workdir):
    make_issues(workdir, ["bd-1"])
    (workdir / ".premath" / "harness_session.json").write_text("{")
    report = cli_run("harness", "boot", "--json").json
    session = roots(report)["session"]
    assert session["state"] == "invalid"
    assert session["why"]
