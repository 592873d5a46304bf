"""The instruction-linked mutation gate (agent-surface.md §1.6): a mutation names an accepted
instruction witness `artifacts/ciwitness/<id>.json` that scopes it.

The witness is read leniently, as the reference reads it: array fields that are not arrays count
as empty and non-string items are dropped; the join-gate keys count as present whatever their
value. The first failing check wins; its message is the reference's.

Under the default witness trust (`mac`, divergences D22-2 to D22-6) the gate also requires what
the reference never checks: the witness file is the pipeline's own (no symlink, its MAC verifies
with a key of this machine), it is not older than `max_age_s`, and under `instruction-linked` an
instruction whose `scope` names issues authorises mutations of those issues only. Trust
`reference` restores the reference's gate. Either way the witness folder must resolve inside the
allowed roots (D22-1).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

import orjson

from premath.errors import InputInvalid, InvalidUsage, IoFailure, RuleRefused
from premath.models.instruction_witness import scope_issue_ids
from premath.store.confine import PathRoots
from premath.store.files import open_regular, read_capped
from premath.store.witness_mac import load_keyring, read_private, verify
from premath.text import rust_trim
from premath.timefmt import NANOS_PER_SECOND, parse_strict_rfc3339

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MutationPolicy = Literal["open", "instruction-linked"]
WitnessTrust = Literal["mac", "reference"]

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
    """What is being gated: the action id, its capability claim, and the issues it is known to
    change before it runs (an id given by the caller; a new or chosen issue is checked later
    against `Link.issue_scope`)."""

    action: str
    issue_ids: tuple[str, ...] = ()

    @property
    def claim(self) -> str:
        return f"{CHANGE_MORPHISMS}.{self.action.replace('.', '_')}"


@dataclass(frozen=True)
class WitnessRules:
    """How far the gate trusts a witness file; the defaults are the safe ones."""

    trust: WitnessTrust = "mac"
    max_age_s: float | None = None
    roots: PathRoots | None = None
    """Where the witness folder may resolve (None: the repository root)."""
    key_file: str | None = None


@dataclass(frozen=True)
class Link:
    """The gate's answer: the link object echoed in results (None: `open` without an id) and,
    when the witness's scope names issues, the only issues the mutation may touch."""

    document: dict[str, Any] | None
    issue_scope: frozenset[str] | None = None

    def refuse_outside_scope(self, action: str, issue_id: str) -> None:
        """GateRefused unless `issue_id` is one the witness's scope names (or none is named)."""
        if self.issue_scope is None or issue_id in self.issue_scope:
            return
        assert self.document is not None
        named = ", ".join(sorted(self.issue_scope)) or "no valid issue id"
        raise GateRefused(
            f"[failureClass=witness.scope_mismatch] instruction `{self.document['instructionId']}`"
            f" is scoped to {named}; mutation action `{action}` would change {issue_id}"
        )


def witness_path(repo_root: str, instruction_id: str) -> str:
    return os.path.join(repo_root, "artifacts", "ciwitness", f"{instruction_id}.json")


def _strings(value: Any) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def _first_class(values: list[str]) -> str | None:
    return next((rust_trim(item) for item in values if rust_trim(item)), None)


def _witness_bytes(path: str, rules: WitnessRules, repo_root: str) -> bytes:
    """The witness file's bytes, read so that no path trick reaches outside the roots: the
    folder resolves inside them, and (trust `mac`) the file is no symlink; never blocks."""
    roots = rules.roots or PathRoots.of(repo_root)
    if not roots.holds(os.path.realpath(os.path.dirname(path))):
        raise GateRefused(
            f"[failureClass=path.outside_root] instruction witness folder of {path} resolves "
            f"outside the allowed roots ({roots.shown()})"
        )
    if not os.path.lexists(path):
        raise GateRefused(f"instruction witness not found: {path}")
    if rules.trust == "mac" and os.path.islink(path):
        raise GateRefused(
            f"[failureClass=witness.symlink] instruction witness {path} is a symlink; only the "
            "file the instruction pipeline wrote authorises a mutation"
        )
    if rules.trust == "reference" and not roots.holds(os.path.realpath(path)):
        raise GateRefused(
            f"[failureClass=path.outside_root] instruction witness {path} resolves to "
            f"{os.path.realpath(path)}, outside the allowed roots ({roots.shown()})"
        )
    try:
        if rules.trust == "mac":
            return read_private(path, _MAX_WITNESS_BYTES)
        with open_regular(path) as handle:
            data = read_capped(handle, _MAX_WITNESS_BYTES)
    except InputInvalid as exc:
        raise GateRefused(f"failed to read {path}: {exc.message}") from None
    except OSError as exc:
        raise GateRefused(f"failed to read {path}: {exc.strerror or exc}") from None
    if len(data) > _MAX_WITNESS_BYTES:
        raise GateRefused(f"failed to read {path}: larger than {_MAX_WITNESS_BYTES} bytes")
    return data


def _load_witness(path: str, data: bytes) -> dict[str, Any]:
    try:
        witness = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise GateRefused(f"failed to parse instruction witness {path}: {exc}") from None
    if not isinstance(witness, dict):
        raise GateRefused(f"instruction witness missing `instructionId`: {path}")
    return witness


def _verify_mac(path: str, data: bytes, instruction_id: str, rules: WitnessRules) -> None:
    try:
        verify(path, data, f"`{instruction_id}`", load_keyring(rules.key_file))
    except (RuleRefused, InvalidUsage, IoFailure) as exc:
        raise GateRefused(exc.message) from None


def _refuse_expired(
    instruction_id: str, witness: dict[str, Any], rules: WitnessRules, now_ns: int
) -> None:
    if rules.max_age_s is None:
        return
    finished = witness.get("runFinishedAt")
    parsed = parse_strict_rfc3339(finished) if isinstance(finished, str) else None
    if parsed is None:
        raise GateRefused(
            f"[failureClass=witness.expired] instruction witness `{instruction_id}` has no "
            "readable `runFinishedAt`, so its age cannot be told (--witness-max-age)"
        )
    age_s = (now_ns - (parsed[0] * NANOS_PER_SECOND + parsed[1])) / NANOS_PER_SECOND
    if age_s > rules.max_age_s:
        raise GateRefused(
            f"[failureClass=witness.expired] instruction witness `{instruction_id}` is from a "
            f"run that finished at {finished}, {age_s:.0f} s ago, past --witness-max-age "
            f"{rules.max_age_s:g} s; run the instruction again"
        )


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
    policy: MutationPolicy,
    instruction_id: str | None,
    repo_root: str,
    mutation: Mutation,
    *,
    now_ns: int = 0,
    rules: WitnessRules | None = None,
) -> Link:
    """The link of an accepted mutation (document None: `open` without an id), or
    GateRefused. `instruction_id` is used verbatim (not trimmed), as the reference does; an id
    that would leave the witness folder is refused as a missing witness."""
    rules = rules or WitnessRules()
    if instruction_id is None or not rust_trim(instruction_id):
        if policy == "instruction-linked":
            raise GateRefused(
                "mutation policy `instruction-linked` requires `instruction_id` on mutation tools"
            )
        return Link(None)
    path = witness_path(repo_root, instruction_id)
    if "/" in instruction_id or "\\" in instruction_id or instruction_id in (".", ".."):
        raise GateRefused(f"instruction witness not found: {path}")
    data = _witness_bytes(path, rules, repo_root)
    if rules.trust == "mac":
        _verify_mac(path, data, instruction_id, rules)
    witness = _load_witness(path, data)
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
    if rules.trust == "mac":
        _refuse_expired(instruction_id, witness, rules, now_ns)
    link = Link(_link(instruction_id, path, witness))
    if policy == "instruction-linked":
        assert link.document is not None
        _check_scope(instruction_id, path, link.document, mutation)
        if rules.trust == "mac":
            link = Link(link.document, scope_issue_ids(witness.get("scope")))
            for issue_id in mutation.issue_ids:
                link.refuse_outside_scope(mutation.action, issue_id)
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
