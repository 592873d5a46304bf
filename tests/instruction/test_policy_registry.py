"""The instruction policy registry: every artifact checked, `pol1_` digests recomputed (§4.3)."""

import json
import shutil
from pathlib import Path

import pytest

from premath.harness.instruction.policy import load_policy_registry, policy_digest

REPO = Path(__file__).resolve().parents[2]
ENVELOPE = {
    "schema": 1,
    "intent": "Run checks.",
    "scope": "repo",
    "instructionType": "ci.gate.check",
    "normalizerId": "normalizer.ci.v1",
    "policyDigest": "pol1_4ba916ce38da5c5607eb7f41d963294b34b644deb1fa6d55e133b072ca001b39",
    "requestedChecks": ["hk-check"],
}


def test_the_repository_policies_have_the_digests_the_mutation_gate_scopes():
    registry = load_policy_registry(str(REPO))
    assert sorted(registry) == sorted(
        [
            "pol1_1ab3e7f398a472c2cf0f3fbd7ead7ece7bd74e836cbde924f1e33f02895d18ab",
            "pol1_23a57a68a45e0c428868cce4b657206fc0bf100f4fd5b303eb0034ff29d92c9f",
            "pol1_4ba916ce38da5c5607eb7f41d963294b34b644deb1fa6d55e133b072ca001b39",
        ]
    )
    for policy in registry.values():
        assert policy.policy_digest == policy_digest(
            policy.policy_id, list(policy.allowed_checks), list(policy.allowed_normalizers)
        )


def check(cli_run, root: Path, envelope=ENVELOPE):
    (root / "i").mkdir(exist_ok=True)
    (root / "i" / "20260301-x.json").write_text(json.dumps(envelope))
    return cli_run("instruction-check", "--instruction", "i/20260301-x.json")


def with_policies(root: Path) -> Path:
    directory = root / "policies" / "instruction"
    shutil.copytree(REPO / "policies" / "instruction", directory)
    return directory


def edit(path: Path, **changes):
    document = json.loads(path.read_text())
    document.update(changes)
    path.write_text(json.dumps(document))


@pytest.mark.parametrize(
    ("breakage", "expected"),
    [
        (
            lambda d: (shutil.rmtree(d), d.write_text("a file")),
            "instruction_unknown_policy: policy registry not found at",
        ),
        (lambda d: [p.unlink() for p in d.iterdir()], "no policy artifacts found under"),
        (
            lambda d: edit(d / "policy-test-v1.json", policyId="policy.other"),
            "instruction_policy_digest_mismatch: policies/instruction/policy-test-v1.json: "
            "policyDigest mismatch",
        ),
        (
            lambda d: shutil.copy(d / "policy-ci-v1.json", d / "policy-ci-v2.json"),
            "policies/instruction/policy-ci-v2.json: duplicate policyDigest",
        ),
        (
            lambda d: (d / "zz.json").write_text("[]"),
            "policies/instruction/zz.json: policy artifact root must be an object",
        ),
        (
            lambda d: edit(d / "policy-test-v1.json", allowedChecks=["a", " a"]),
            "allowedChecks must not contain duplicates",
        ),
    ],
)
def test_a_broken_registry_refuses_every_envelope(cli_run, workdir, breakage, expected):
    breakage(with_policies(workdir))
    result = check(cli_run, workdir)
    assert (result.exit_code, result.stdout) == (2, "")
    assert expected in result.stderr


def test_unknown_or_non_canonical_policy_digests(cli_run, workdir):
    with_policies(workdir)
    for digest, expected in (
        ("sha256:abc", "policyDigest must be a canonical digest (pol1_...)"),
        ("pol1_0000", 'policyDigest "pol1_0000" is not registered'),
    ):
        result = check(cli_run, workdir, {**ENVELOPE, "policyDigest": digest})
        assert result.exit_code == 2
        assert f"instruction_unknown_policy: {expected}" in result.stderr


def test_checks_and_normalizers_outside_the_policy(cli_run, workdir):
    with_policies(workdir)
    result = check(cli_run, workdir, {**ENVELOPE, "requestedChecks": ["zeta", "hk-check", "alpha"]})
    assert 'not allowed by policyDigest "pol1_4ba9' in result.stderr
    assert result.stderr.rstrip().endswith('["alpha", "zeta"]')
    result = check(cli_run, workdir, {**ENVELOPE, "normalizerId": "normalizer.test.v1"})
    assert "instruction_normalizer_not_allowed" in result.stderr
    assert result.stderr.rstrip().endswith('"normalizer.test.v1"')


def test_a_proposal_bound_to_another_policy_is_contradictory(cli_run, workdir):
    with_policies(workdir)
    proposal = {
        "proposalKind": "value",
        "targetCtxRef": "ctx:x",
        "targetJudgment": {"kind": "obj", "shape": "s"},
        "candidateRefs": ["ref:a"],
        "binding": {"normalizerId": "normalizer.ci.v1", "policyDigest": "pol1_other"},
    }
    result = check(cli_run, workdir, {**ENVELOPE, "proposal": proposal})
    assert result.exit_code == 2
    assert "proposal_binding_mismatch: proposal.binding.policyDigest must match" in result.stderr


def test_instruction_witness_only_prints(cli_run, workdir):
    with_policies(workdir)
    check(cli_run, workdir)
    runtime = {
        "instructionId": "20260301-x",
        "instructionRef": "i/20260301-x.json",
        "instructionDigest": "instr1_demo",
        "squeakSiteProfile": "local",
        "runStartedAt": "2026-03-01T00:00:00Z",
        "runFinishedAt": "2026-03-01T00:00:01Z",
        "runDurationMs": 1000,
        "results": [{"checkId": "hk-check", "status": "failed", "exitCode": 3, "durationMs": 5}],
    }
    (workdir / "rt.json").write_text(json.dumps(runtime))
    result = cli_run(
        "instruction-witness", "--instruction", "i/20260301-x.json", "--runtime", "rt.json"
    )
    assert result.exit_code == 0
    assert result.stdout.splitlines()[2:] == [
        "  Verdict: rejected",
        "  Failure Classes: check_failed",
    ]
    assert not (workdir / "artifacts").exists()
