"""A realistic project to observe: CI witnesses in the shapes the reference CI writes, and issue
memory with ready, blocked, in-progress and closed issues and a live lease."""

from pathlib import Path
from typing import Any

import orjson

TYPED = "ev1_c07198c937291ebbf384abc93e86343db738506d75918e0fbb931e15a325e55b"
ALIAS = "proj1_d7c62b3e0e7cd6955f74a72eb217cf503ba6a7dc3579464bd6fd63cde92b4803"
POLICY = "pol1_4ba916ce38da5c5607eb7f41d963294b34b644deb1fa6d55e133b072ca001b39"


def _write(path: Path, document: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")


def instruction_witness(instruction_id: str, **fields: Any) -> dict[str, Any]:
    return {
        "ciSchema": 1,
        "witnessKind": "ci.instruction.v1",
        "instructionId": instruction_id,
        "instructionDigest": f"instr1_{instruction_id}",
        "instructionClassification": {"state": "typed", "kind": "ci.gate.check"},
        "intent": "keep the build green",
        "scope": {"kind": "repo"},
        "policyDigest": POLICY,
        "verdictClass": "accepted",
        "requiredChecks": ["test"],
        "executedChecks": ["test"],
        "failureClasses": [],
        "runStartedAt": "2026-02-22T01:00:00Z",
        "runFinishedAt": "2026-02-22T01:00:05Z",
        **fields,
    }


def write_witnesses(root: Path, decision: str = "accept") -> Path:
    folder = root / "artifacts" / "ciwitness"
    common = {
        "projectionPolicy": "ci-topos-v0",
        "projectionDigest": ALIAS,
        "typedCoreProjectionDigest": TYPED,
        "authorityPayloadDigest": ALIAS,
        "normalizerId": "normalizer.ci.required.v1",
        "policyDigest": "ci-topos-v0",
    }
    _write(
        folder / "latest-delta.json",
        {"deltaKind": "ci.delta.v1", **common, "changedPaths": ["README.md", "premath/x.py"]},
    )
    _write(
        folder / "latest-required.json",
        {
            "witnessKind": "ci.required.v1",
            **common,
            "verdictClass": "accepted",
            "requiredChecks": ["build", "test"],
            "executedChecks": ["build", "test"],
            "failureClasses": [],
        },
    )
    _write(
        folder / "latest-decision.json",
        {
            "decisionKind": "ci.required.decision.v1",
            **common,
            "decision": decision,
            "reasonClass": "verified_accept" if decision == "accept" else "check_failed",
            "requiredChecks": ["build", "test"],
        },
    )
    for instruction_id in ("20260222T010000Z-ci-wiring", "20260222T020000Z-bootstrap"):
        _write(folder / f"{instruction_id}.json", instruction_witness(instruction_id))
    return folder


def issue(issue_id: str, title: str, status: str = "open", **fields: Any) -> dict[str, Any]:
    return {
        "id": issue_id,
        "title": title,
        "status": status,
        "priority": 2,
        "issue_type": "task",
        "created_at": "2026-02-22T00:00:00Z",
        "updated_at": "2026-02-22T00:00:00Z",
        "ephemeral": False,
        **fields,
    }


def blocks(issue_id: str, target: str) -> dict[str, Any]:
    return {"issue_id": issue_id, "depends_on_id": target, "type": "blocks"}


def lease(issue_id: str, owner: str, expires_at: str) -> dict[str, Any]:
    return {
        "lease_id": f"lease1_{issue_id}_{owner}",
        "owner": owner,
        "acquired_at": "2026-02-22T00:00:00Z",
        "expires_at": expires_at,
    }


def sample_issues() -> list[dict[str, Any]]:
    return [
        issue("bd-1", "Wire the observation dashboard", priority=1),
        issue("bd-2", "Follow-up blocked on bd-3", dependencies=[blocks("bd-2", "bd-3")]),
        issue(
            "bd-3",
            "In-flight work",
            "in_progress",
            assignee="alice",
            lease=lease("bd-3", "alice", "2099-01-01T00:00:00Z"),
        ),
        issue("bd-4", "Done already", "closed", closed_at="2026-02-22T00:00:00Z"),
    ]


def write_issues(root: Path, rows: list[dict[str, Any]]) -> Path:
    path = root / ".premath" / "issues.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    return path


def seed_project(root: Path, decision: str = "accept") -> None:
    write_witnesses(root, decision)
    write_issues(root, sample_issues())


def minimal_surface() -> dict[str, Any]:
    """A small surface the reference's decoding accepts: one required witness (typed digest
    `ev1_x`) and one instruction (`i-1`)."""
    required = {
        "ref": "artifacts/ciwitness/latest-required.json",
        "witnessKind": "ci.required.v1",
        "projectionPolicy": None,
        "projectionDigest": "proj1_x",
        "typedCoreProjectionDigest": "ev1_x",
        "verdictClass": "accepted",
        "requiredChecks": [],
        "executedChecks": [],
        "failureClasses": [],
    }
    instruction = {
        "ref": "artifacts/ciwitness/i-1.json",
        "witnessKind": "ci.instruction.v1",
        "instructionId": "i-1",
        "instructionDigest": None,
        "instructionClassification": None,
        "intent": None,
        "scope": None,
        "policyDigest": None,
        "verdictClass": "accepted",
        "requiredChecks": [],
        "executedChecks": [],
        "failureClasses": [],
    }
    surface = {
        "schema": 1,
        "surfaceKind": "ci.observation.surface.v0",
        "summary": {
            "state": "ok",
            "needsAttention": False,
            "topFailureClass": None,
            "latestProjectionDigest": "ev1_x",
            "latestInstructionId": "i-1",
            "requiredCheckCount": 0,
            "executedCheckCount": 0,
            "changedPathCount": 0,
        },
        "latest": {"delta": None, "required": required, "decision": None},
        "instructions": [instruction],
    }
    return surface
