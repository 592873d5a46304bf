"""`premath instruction-run` (`mise run ci-pipeline-instruction`): envelope -> checks -> witness."""

import json
import shutil
from pathlib import Path

import orjson

from premath.models.instruction_witness import InstructionWitness
from tests.instruction.envelopes import envelope
from tests.instruction.gate import gate_refusal

REPO = Path(__file__).resolve().parents[2]
INSTRUCTION = "instructions/20260301T000000Z-update-gate.json"
WITNESS = Path("artifacts/ciwitness/20260301T000000Z-update-gate.json")


def setup_repo(root: Path, document) -> None:
    shutil.copytree(REPO / "policies" / "instruction", root / "policies" / "instruction")
    (root / "instructions").mkdir()
    (root / INSTRUCTION).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def run(cli_run, check_command="true {check}", *extra):
    return cli_run(
        "instruction-run",
        "--instruction",
        INSTRUCTION,
        "--check-command",
        check_command,
        *extra,
        "--json",
    )


def test_accepted_run_writes_a_witness_the_mutation_gate_accepts(cli_run, workdir):
    setup_repo(workdir, envelope())
    result = run(cli_run, "echo {check} >> ran.txt")
    assert (result.exit_code, result.json["verdictClass"]) == (0, "accepted")
    assert result.json["witnessPath"] == WITNESS.as_posix()
    assert (workdir / "ran.txt").read_text().split() == ["ci-wiring-check", "test"]
    data = (workdir / WITNESS).read_bytes()
    assert data.endswith(b"}\n")
    witness = orjson.loads(data)
    assert list(witness)[:6] == [
        "ciSchema",
        "witnessKind",
        "instructionId",
        "instructionRef",
        "instructionDigest",
        "instructionClassification",
    ]
    assert witness["instructionRef"] == INSTRUCTION
    assert witness["executedChecks"] == ["ci-wiring-check", "test"]
    InstructionWitness.model_validate(witness)
    check = cli_run("instruction-check", "--instruction", INSTRUCTION, "--json").json
    assert witness["instructionDigest"] == check["instructionDigest"]
    for action in ("issue.claim", "issue.add", "issue.lease_release"):
        assert gate_refusal(workdir, WITNESS.stem, action, "instruction-linked") is None
    assert gate_refusal(workdir, WITNESS.stem, "issue.update", "open") is None
    # No reference tool writes join-gate evidence (agent-surface.md §6 quirk 4).
    assert "join-gate evidence" in gate_refusal(
        workdir, WITNESS.stem, "issue.update", "instruction-linked"
    )
    assert not list((workdir / WITNESS.parent).glob("*.tmp*"))


def test_a_failing_check_rejects_and_the_gate_refuses_the_witness(cli_run, workdir):
    setup_repo(workdir, envelope())
    result = run(cli_run, "test {check} != test")
    assert (result.exit_code, result.json["failureClasses"]) == (1, ["check_failed"])
    witness = orjson.loads((workdir / WITNESS).read_bytes())
    assert [r["exitCode"] for r in witness["results"]] == [0, 1]
    assert "not accepted" in gate_refusal(workdir, WITNESS.stem, "issue.claim", "open")
    assert run(cli_run, "false {check}", "--allow-failure").exit_code == 0


def test_a_reject_decision_runs_no_check(cli_run, workdir):
    document = envelope(requestedChecks=["build"])
    del document["instructionType"]
    setup_repo(workdir, document)
    result = run(cli_run, "touch ran-{check}")
    assert (result.exit_code, result.json["failureClasses"]) == (
        1,
        ["instruction_unknown_unroutable"],
    )
    assert not list(workdir.glob("ran-*"))
    assert orjson.loads((workdir / WITNESS).read_bytes())["executedChecks"] == []


def test_an_invalid_envelope_exits_2_with_a_pre_execution_witness(cli_run, workdir):
    setup_repo(workdir, envelope(policyDigest="pol1_unknown"))
    result = run(cli_run, "touch ran-{check}")
    assert result.exit_code == 2
    assert "instruction_unknown_policy" in result.stderr
    witness = orjson.loads((workdir / WITNESS).read_bytes())
    assert (witness["rejectStage"], witness["failureClasses"]) == (
        "pre_execution",
        ["instruction_unknown_policy"],
    )
    assert not list(workdir.glob("ran-*"))
    assert gate_refusal(workdir, WITNESS.stem, "issue.claim", "open") is not None


def test_a_witness_directory_that_is_a_file_fails_and_writes_nothing(cli_run, workdir):
    setup_repo(workdir, envelope())
    (workdir / "artifacts").mkdir()
    (workdir / "artifacts" / "ciwitness").write_text("not a directory")
    result = run(cli_run)
    assert result.exit_code == 1
    assert "must be a writable directory" in result.stderr
    assert (workdir / "artifacts" / "ciwitness").read_text() == "not a directory"
    assert sorted(p.name for p in (workdir / "artifacts").iterdir()) == ["ciwitness"]


def test_the_repository_instructions_validate(cli_run, workdir):
    shutil.copytree(REPO / "policies" / "instruction", workdir / "policies" / "instruction")
    for path in sorted((REPO / "instructions").glob("*.json")):
        result = cli_run("instruction-check", "--instruction", str(path), "--json")
        assert result.exit_code == 0, result.stderr
        assert result.json["executionDecision"] == {"state": "execute"}


def test_a_join_check_input_adds_the_join_gate_evidence_the_gate_reads(cli_run, workdir):
    from tests.harness.join_check_inputs import baseline

    (workdir / "join").mkdir()
    (workdir / "join" / "closed.json").write_text(json.dumps(baseline()))
    setup_repo(workdir, envelope(joinCheckInput="join/closed.json"))
    assert run(cli_run).exit_code == 0
    witness = orjson.loads((workdir / WITNESS).read_bytes())
    assert list(witness)[-3:] == ["joinClosed", "joinFailureClasses", "joinWitnessRef"]
    assert (witness["joinClosed"], witness["joinFailureClasses"]) == (True, [])
    assert witness["joinWitnessRef"].startswith(".premath/join-witnesses/")
    assert (workdir / witness["joinWitnessRef"]).is_file()
    assert gate_refusal(workdir, WITNESS.stem, "issue.update", "instruction-linked") is None

    open_join = baseline()
    open_join["evidence"]["toolResults"] = []
    (workdir / "join" / "closed.json").write_text(json.dumps(open_join))
    assert run(cli_run).exit_code == 0
    witness = orjson.loads((workdir / WITNESS).read_bytes())
    assert witness["joinClosed"] is False
    assert witness["joinFailureClasses"]
    assert "join gate rejected" in gate_refusal(
        workdir, WITNESS.stem, "issue.update", "instruction-linked"
    )


def test_a_check_command_whose_program_is_missing_is_said_before_the_checks_run(cli_run, workdir):
    """The default `mise run {check}` without mise (D25-5): the user is told what to pass."""
    setup_repo(workdir, envelope())
    result = run(cli_run, "no-such-runner-25 run {check}")
    assert result.exit_code == 1  # every check failed to start: rejected
    assert result.stderr.splitlines()[0] == (
        "warning: no-such-runner-25 is not installed: the checks will fail to start; install it "
        "or pass --check-command (e.g. --check-command 'sh -c {check}')"
    )
    assert "warning" not in run(cli_run, "true {check}").stderr
