"""The harness contract's memory roots, each with its state: present, missing, or invalid (why).

Roots: issues, session, feature ledger, trajectory, the instruction witnesses
(`artifacts/ciwitness/*.json`, the latest accepted witness per instruction) and the observation
surface (`artifacts/observation/latest.json`). Paths of the artifact roots are shown relative
to the repository root. Reading a root never changes it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from premath.models.instruction_witness import WITNESS_DIR
from premath.store.documents import os_error_text

OBSERVATION_PATH = "artifacts/observation/latest.json"
SCOPED_POLICY_DIGESTS = frozenset(
    {
        "pol1_4ba916ce38da5c5607eb7f41d963294b34b644deb1fa6d55e133b072ca001b39",
        "pol1_1ab3e7f398a472c2cf0f3fbd7ead7ece7bd74e836cbde924f1e33f02895d18ab",
    }
)
"""The policies the MCP mutation gate scopes mutations to (agent-surface.md §1.6)."""
CLAIM_CLAIMS = ("capabilities.change_morphisms.issue_claim", "capabilities.change_morphisms.all")

RootState = Literal["present", "missing", "invalid"]


def _root(name: str, path: str, state: RootState, why: str | None = None) -> dict[str, Any]:
    root: dict[str, Any] = {"name": name, "path": path, "state": state}
    if why is not None:
        root["why"] = why
    return root


def file_root(name: str, path: str, shown: str, error: str | None = None) -> dict[str, Any]:
    """A file root: missing, a directory (invalid), or present unless `error` says otherwise."""
    if not os.path.lexists(path):
        return _root(name, shown, "missing")
    if os.path.isdir(path):
        return _root(name, shown, "invalid", "is a directory, not a file")
    return _root(name, shown, "invalid" if error else "present", error)


def _read_json(path: str) -> tuple[Any, str | None]:
    try:
        with open(path, "rb") as handle:
            return orjson.loads(handle.read()), None
    except OSError as exc:
        return None, os_error_text(exc)
    except orjson.JSONDecodeError as exc:
        return None, f"not JSON: {exc}"


def observation_root(repo_root: str) -> dict[str, Any]:
    """The surface `observe-build` writes, read by premath.observe's loader: `invalid` (with the
    loader's cause) when `observe` would refuse it; when present, its state and attention."""
    from premath.observe.surface import SurfaceUnavailable, load_surface

    path = os.path.join(repo_root, OBSERVATION_PATH)
    if not os.path.isfile(path):
        return file_root("observation", path, OBSERVATION_PATH)
    try:
        summary = load_surface(path).summary
    except SurfaceUnavailable as exc:
        return file_root("observation", path, OBSERVATION_PATH, exc.cause)
    root = file_root("observation", path, OBSERVATION_PATH)
    root["surface"] = {
        "state": summary["state"],
        "needsAttention": summary["needsAttention"],
        "topFailureClass": summary["topFailureClass"],
    }
    return root


@dataclass(frozen=True)
class BoundWitness:
    """An accepted witness the mutation gate would honour, with what it binds."""

    instruction_id: str
    path: str
    policy_digest: str | None
    capability_claims: tuple[str, ...]
    scope: Any

    @property
    def scoped(self) -> bool:
        """Its policy is one the gate scopes mutations to and it may claim issues."""
        claims = set(self.capability_claims)
        return (
            self.policy_digest in SCOPED_POLICY_DIGESTS
            and "capabilities.change_morphisms" in claims
            and any(claim in claims for claim in CLAIM_CLAIMS)
        )

    def bound_issue(self) -> str | None:
        """The issue its scope names (`{"kind": "issue", "target": <id>}`), if any."""
        scope = self.scope
        if isinstance(scope, dict) and scope.get("kind") == "issue":
            target = scope.get("target", scope.get("issueId"))
            return target if isinstance(target, str) and target else None
        return None

    def to_document(self) -> dict[str, Any]:
        return {
            "instructionId": self.instruction_id,
            "path": self.path,
            "policyDigest": self.policy_digest,
            "capabilityClaims": list(self.capability_claims),
            "boundIssueId": self.bound_issue(),
            "mutationScoped": self.scoped,
        }


def _instruction_name(instruction_id: str) -> str:
    """`<ts>-<name>`: runs of one instruction share the name; the timestamp orders them."""
    return instruction_id.split("-", 1)[1] if "-" in instruction_id else instruction_id


def witness_root(repo_root: str) -> tuple[dict[str, Any], list[BoundWitness]]:
    """The witness root's state and the latest accepted witness of each instruction."""
    from pydantic import ValidationError

    from premath.models.instruction_witness import InstructionWitness

    directory = os.path.join(repo_root, WITNESS_DIR)
    if not os.path.lexists(directory):
        return _root("instructionWitnesses", WITNESS_DIR, "missing"), []
    if not os.path.isdir(directory):
        return _root(
            "instructionWitnesses", WITNESS_DIR, "invalid", "is a file, not a directory"
        ), []
    try:
        names = sorted(name for name in os.listdir(directory) if name.endswith(".json"))
    except OSError as exc:
        return _root("instructionWitnesses", WITNESS_DIR, "invalid", os_error_text(exc)), []
    invalid: list[dict[str, str]] = []
    latest: dict[str, BoundWitness] = {}
    for name in names:
        shown = f"{WITNESS_DIR}/{name}"
        document, error = _read_json(os.path.join(directory, name))
        if error is not None:
            invalid.append({"path": shown, "why": error})
            continue
        try:
            witness = InstructionWitness.model_validate(document)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "(root)"
            invalid.append({"path": shown, "why": f"{where}: {first['msg']}"})
            continue
        if witness.instruction_id != name.removesuffix(".json"):
            invalid.append({"path": shown, "why": "instructionId does not match the file name"})
            continue
        if witness.accepted:
            bound = BoundWitness(
                witness.instruction_id,
                shown,
                witness.policy_digest,
                tuple(witness.capability_claims),
                witness.scope,
            )
            key = _instruction_name(witness.instruction_id)
            if key not in latest or latest[key].instruction_id < witness.instruction_id:
                latest[key] = bound
    accepted = sorted(latest.values(), key=lambda w: w.instruction_id)
    root = _root("instructionWitnesses", WITNESS_DIR, "invalid" if invalid else "present")
    root["count"] = len(names)
    root["latestAccepted"] = [witness.to_document() for witness in accepted]
    if invalid:
        root["why"] = f"{len(invalid)} witness file(s) cannot be read as ci.instruction.v1"
        root["invalidWitnesses"] = invalid
    return root, accepted
