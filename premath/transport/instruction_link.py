"""The instruction-linked mutation gate (agent-surface.md §1.6): a mutation names an accepted
instruction witness `artifacts/ciwitness/<id>.json` that scopes it.

The witness is read leniently, as the reference reads it: array fields that are not arrays count
as empty and non-string items are dropped; the join-gate keys count as present whatever their
value. The first failing check wins; its message is the reference's.
"""

import os
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from premath.text import rust_trim

MutationPolicy = Literal["open", "instruction-linked"]

ALLOWED_POLICY_DIGESTS = frozenset(
    {
        "pol1_4ba916ce38da5c5607eb7f41d963294b34b644deb1fa6d55e133b072ca001b39",
        "pol1_1ab3e7f398a472c2cf0f3fbd7ead7ece7bd74e836cbde924f1e33f02895d18ab",
    }
)
CHANGE_MORPHISMS = "capabilities.change_morphisms"
JOIN_GATED_ACTIONS = frozenset(
    {"issue.discover", "issue.update", "dep.add", "dep.remove", "dep.replace"}
)
_JOIN_KEYS = ("joinClosed", "joinFailureClasses", "joinWitnessRef")
_MAX_WITNESS_BYTES = 4 * 1024 * 1024


class GateRefused(Exception):
    """A mutation the gate refuses; `message` is the tool error text (class tag included)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Mutation:
    """What is being gated: the action id, and its capability claim."""

    action: str

    @property
    def claim(self) -> str:
        return f"{CHANGE_MORPHISMS}.{self.action.replace('.', '_')}"


def witness_path(repo_root: str, instruction_id: str) -> str:
    return os.path.join(repo_root, "artifacts", "ciwitness", f"{instruction_id}.json")


def _strings(value: Any) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def _first_class(values: list[str]) -> str | None:
    return next((rust_trim(item) for item in values if rust_trim(item)), None)


def _load_witness(path: str) -> dict[str, Any]:
    if not os.path.exists(path):
        raise GateRefused(f"instruction witness not found: {path}")
    try:
        with open(path, "rb") as handle:
            data = handle.read(_MAX_WITNESS_BYTES + 1)
    except OSError as exc:
        raise GateRefused(f"failed to read {path}: {exc.strerror or exc}") from None
    if len(data) > _MAX_WITNESS_BYTES:
        raise GateRefused(f"failed to read {path}: larger than {_MAX_WITNESS_BYTES} bytes")
    try:
        witness = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise GateRefused(f"failed to parse instruction witness {path}: {exc}") from None
    if not isinstance(witness, dict):
        raise GateRefused(f"instruction witness missing `instructionId`: {path}")
    return witness


def _link(instruction_id: str, path: str, witness: dict[str, Any]) -> dict[str, Any]:
    join_closed = witness.get("joinClosed")
    join_ref = witness.get("joinWitnessRef")
    digest = witness.get("instructionDigest")
    policy = witness.get("policyDigest")
    return {
        "instructionId": instruction_id,
        "witnessPath": path,
        "instructionDigest": digest if isinstance(digest, str) else None,
        "policyDigest": policy if isinstance(policy, str) else None,
        "capabilityClaims": _strings(witness.get("capabilityClaims")),
        "requiredChecks": _strings(witness.get("requiredChecks")),
        "executedChecks": _strings(witness.get("executedChecks")),
        "failureClasses": _strings(witness.get("failureClasses")),
        "joinGatePresent": any(key in witness for key in _JOIN_KEYS),
        "joinClosed": join_closed if isinstance(join_closed, bool) else None,
        "joinFailureClasses": _strings(witness.get("joinFailureClasses")),
        "joinWitnessRef": join_ref if isinstance(join_ref, str) else None,
    }


def resolve_instruction_link(
    policy: MutationPolicy, instruction_id: str | None, repo_root: str, mutation: Mutation
) -> dict[str, Any] | None:
    """The instruction link object of an accepted mutation (None: `open` without an id), or
    GateRefused. `instruction_id` is used verbatim (not trimmed), as the reference does; an id
    that would leave the witness folder is refused as a missing witness."""
    if instruction_id is None or not rust_trim(instruction_id):
        if policy == "instruction-linked":
            raise GateRefused(
                "mutation policy `instruction-linked` requires `instruction_id` on mutation tools"
            )
        return None
    path = witness_path(repo_root, instruction_id)
    if "/" in instruction_id or "\\" in instruction_id or instruction_id in (".", ".."):
        raise GateRefused(f"instruction witness not found: {path}")
    witness = _load_witness(path)
    found_id = witness.get("instructionId")
    if not isinstance(found_id, str):
        raise GateRefused(f"instruction witness missing `instructionId`: {path}")
    if found_id != instruction_id:
        raise GateRefused(
            f"instruction witness id mismatch (expected `{instruction_id}`, got `{found_id}`)"
        )
    verdict = witness.get("verdictClass")
    if verdict != "accepted":
        shown = verdict if isinstance(verdict, str) else "missing"
        raise GateRefused(
            f"instruction witness is not accepted for `{instruction_id}` (verdictClass={shown})"
        )
    link = _link(instruction_id, path, witness)
    if policy == "instruction-linked":
        _check_scope(instruction_id, path, link, mutation)
    return link


def _check_scope(instruction_id: str, path: str, link: dict[str, Any], mutation: Mutation) -> None:
    action = mutation.action
    digest = link["policyDigest"]
    if digest is None:
        raise GateRefused(
            f"instruction witness `{instruction_id}` missing `policyDigest` required for "
            "mutation policy scope"
        )
    if digest not in ALLOWED_POLICY_DIGESTS:
        raise GateRefused(
            f"instruction policyDigest `{digest}` is not scoped for mutation action `{action}`"
        )
    claims = link["capabilityClaims"]
    if CHANGE_MORPHISMS not in claims:
        raise GateRefused(
            f"instruction `{instruction_id}` missing required capability claim "
            f"`{CHANGE_MORPHISMS}` for mutation action `{action}`"
        )
    if mutation.claim not in claims and f"{CHANGE_MORPHISMS}.all" not in claims:
        raise GateRefused(
            f"instruction `{instruction_id}` missing required action capability claim "
            f"`{mutation.claim}` for mutation action `{action}`"
        )
    failure = _first_class(link["failureClasses"])
    if failure is not None:
        raise GateRefused(
            f"[failureClass={failure}] instruction witness rejected mutation action `{action}` "
            f"(instructionWitness={path})"
        )
    if action not in JOIN_GATED_ACTIONS:
        return
    if not link["joinGatePresent"]:
        raise GateRefused(
            "[failureClass=mutation.use_evidence_missing] instruction witness "
            f"`{instruction_id}` missing join-gate evidence for mutation action `{action}` "
            f"(instructionWitness={path})"
        )
    join_ref = link["joinWitnessRef"] or "missing"
    join_failure = _first_class(link["joinFailureClasses"])
    if join_failure is not None:
        raise GateRefused(
            f"[failureClass={join_failure}] instruction join gate rejected mutation action "
            f"`{action}` (instructionWitness={path}, joinWitnessRef={join_ref})"
        )
    if link["joinClosed"] is not True:
        raise GateRefused(
            "[failureClass=tool.join_incomplete] instruction join gate is not closed for "
            f"mutation action `{action}` (instructionWitness={path}, joinWitnessRef={join_ref})"
        )
