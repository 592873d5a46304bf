"""Proposals carried by an envelope: validation, obligations, discharge (agent-surface.md §4.5).

Documents are plain dicts in the reference's struct order; digests hash them key-sorted.
"""

from __future__ import annotations

from premath.harness.instruction.digests import stable_hash
from premath.harness.instruction.errors import InstructionError, rust_debug_list
from premath.harness.instruction.policy import non_empty_string

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PROPOSAL_KINDS = ["value", "derivation", "refinementPlan"]
REFINEMENT_OBLIGATIONS = (
    "adjoint_triple",
    "adjoint_triangle",
    "beck_chevalley_sigma",
    "beck_chevalley_pi",
    "refinement_invariance",
)
HINTED_OBLIGATIONS = frozenset(REFINEMENT_OBLIGATIONS[1:])
OBLIGATION_FAILURE_CLASS = {
    "stability": "stability_failure",
    "refinement_invariance": "stability_failure",
    "locality": "locality_failure",
    "descent_exists": "descent_failure",
    "ext_gap": "descent_failure",
    "descent_contractible": "glue_non_contractible",
    "ext_ambiguous": "glue_non_contractible",
    "adjoint_triple": "adjoint_triple_coherence_failure",
    "adjoint_triangle": "adjoint_triple_coherence_failure",
    "beck_chevalley_sigma": "adjoint_triple_coherence_failure",
    "beck_chevalley_pi": "adjoint_triple_coherence_failure",
}
LAW_REF = {
    "stability_failure": "GATE-3.1",
    "locality_failure": "GATE-3.2",
    "descent_failure": "GATE-3.3",
    "glue_non_contractible": "GATE-3.4",
    "adjoint_triple_coherence_failure": "GATE-3.5",
}
STEP = "proposal_invalid_step"


def _object(value: Any, failure_class: str, message: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InstructionError(failure_class, message)
    return value


def _strings(value: Any, label: str, message: str) -> list[str]:
    if not isinstance(value, list):
        raise InstructionError(STEP, message)
    return [non_empty_string(item, f"{label}[{i}]", STEP) for i, item in enumerate(value)]


def _steps(root: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    raw = root.get("steps")
    if "steps" in root and not isinstance(raw, list):
        raise InstructionError(STEP, "proposal.steps must be a list")
    has_steps = bool(raw)
    if kind == "derivation" and not has_steps:
        raise InstructionError(STEP, "proposal.steps must be non-empty for derivation proposals")
    if kind != "derivation" and has_steps:
        raise InstructionError(STEP, "proposal.steps is only valid for derivation proposals")
    steps = []
    for index, item in enumerate(raw or []):
        label = f"proposal.steps[{index}]"
        step = _object(item, STEP, f"{label} must be an object")
        rule_id = non_empty_string(step.get("ruleId"), f"{label}.ruleId", STEP)
        claim = non_empty_string(step.get("claim"), f"{label}.claim", STEP)
        lists = f"{label}.inputs/outputs must be lists"
        inputs = _strings(step["inputs"], f"{label}.inputs", lists) if "inputs" in step else []
        outputs = _strings(step["outputs"], f"{label}.outputs", lists) if "outputs" in step else []
        steps.append({"ruleId": rule_id, "inputs": inputs, "outputs": outputs, "claim": claim})
    return steps


def canonical_proposal(raw: Any) -> dict[str, Any]:
    """The canonical proposal (struct order), or InstructionError with the reference's class."""
    root = _object(raw, "proposal_invalid_shape", "proposal must be an object")
    kind = non_empty_string(
        root.get("proposalKind"), "proposal.proposalKind", "proposal_invalid_kind"
    )
    if kind not in PROPOSAL_KINDS:
        raise InstructionError(
            "proposal_invalid_kind",
            f"proposal.proposalKind must be one of {rust_debug_list(PROPOSAL_KINDS)}",
        )
    target = non_empty_string(
        root.get("targetCtxRef"), "proposal.targetCtxRef", "proposal_invalid_target"
    )
    judgment_class = "proposal_invalid_target_judgment"
    judgment = _object(
        root.get("targetJudgment"), judgment_class, "proposal.targetJudgment must be an object"
    )
    judgment_kind = non_empty_string(
        judgment.get("kind"), "proposal.targetJudgment.kind", judgment_class
    )
    if judgment_kind not in ("obj", "mor"):
        raise InstructionError(
            judgment_class, "proposal.targetJudgment.kind must be 'obj' or 'mor'"
        )
    shape = non_empty_string(judgment.get("shape"), "proposal.targetJudgment.shape", judgment_class)
    unbound = "proposal_unbound_policy"
    binding = _object(root.get("binding"), unbound, "proposal.binding must be an object")
    normalizer = non_empty_string(
        binding.get("normalizerId"), "proposal.binding.normalizerId", unbound
    )
    policy = non_empty_string(binding.get("policyDigest"), "proposal.binding.policyDigest", unbound)
    candidates: list[str] = []
    if "candidateRefs" in root:
        candidates = _strings(
            root["candidateRefs"], "proposal.candidateRefs", "proposal.candidateRefs must be a list"
        )
    steps = _steps(root, kind)
    canonical: dict[str, Any] = {
        "proposalKind": kind,
        "targetCtxRef": target,
        "targetJudgment": {"kind": judgment_kind, "shape": shape},
        "candidateRefs": sorted(set(candidates)),
        "binding": {"normalizerId": normalizer, "policyDigest": policy},
    }
    if steps:
        canonical["steps"] = steps
    _check_declared(
        root,
        "proposalDigest",
        proposal_digest(canonical),
        "proposal_nondeterministic",
        "proposal.proposalDigest does not match canonical payload digest",
    )
    _check_declared(
        root,
        "proposalKcirRef",
        kcir_ref(canonical),
        "proposal_kcir_ref_mismatch",
        "proposal.proposalKcirRef does not match canonical KCIR ref",
    )
    return canonical


def _check_declared(
    root: dict[str, Any], key: str, computed: str, failure_class: str, message: str
) -> None:
    if key in root:
        declared = non_empty_string(root[key], f"proposal.{key}", failure_class)
        if declared != computed:
            raise InstructionError(failure_class, message)


def proposal_digest(canonical: dict[str, Any]) -> str:
    return "prop1_" + stable_hash(canonical)


def kcir_ref(canonical: dict[str, Any]) -> str:
    return "kcir1_" + stable_hash({"kind": "kcir.proposal.v1", "canonicalProposal": canonical})


def _subject_ref(canonical: dict[str, Any]) -> str:
    if canonical["candidateRefs"]:
        return str(canonical["candidateRefs"][0])
    for step in reversed(canonical.get("steps", [])):
        if step["outputs"]:
            return str(step["outputs"][0])
    return f"{canonical['targetCtxRef']}#{canonical['targetJudgment']['kind']}"


def obligations(canonical: dict[str, Any]) -> list[dict[str, Any]]:
    steps = canonical.get("steps", [])
    candidates = canonical["candidateRefs"]
    has_candidate = bool(candidates) or any(step["outputs"] for step in steps)
    kinds = ["stability", "locality", "descent_exists" if has_candidate else "ext_gap"]
    if canonical["proposalKind"] == "value" and len(candidates) > 1:
        kinds.append("ext_ambiguous")
    if canonical["proposalKind"] == "refinementPlan":
        kinds.extend(REFINEMENT_OBLIGATIONS)
    subject = {"kind": canonical["targetJudgment"]["kind"], "ref": _subject_ref(canonical)}
    ctx = {"ref": canonical["targetCtxRef"]}
    rows = []
    for index, kind in enumerate(kinds):
        details = {
            "proposalKind": canonical["proposalKind"],
            "candidateCount": len(candidates),
            "stepCount": len(steps),
            "obligationIndex": index,
        }
        core = {"kind": kind, "ctx": ctx, "subject": subject, "details": details}
        rows.append({"obligationId": "obl1_" + stable_hash(core), **core})
    return rows


def discharge(canonical: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    binding = canonical["binding"]
    candidates = set(canonical["candidateRefs"])
    classes: set[str] = set()
    steps = []
    for row in rows:
        kind = row["kind"]
        hint = f"hint:{kind}" if kind in HINTED_OBLIGATIONS else None
        hint_missing = hint is not None and hint not in candidates
        failed = kind in ("ext_gap", "ext_ambiguous") or hint_missing
        step: dict[str, Any] = {
            "obligationId": row["obligationId"],
            "kind": kind,
            "status": "failed" if failed else "passed",
            "mode": "normalized",
            "binding": binding,
        }
        if failed:
            failure_class = OBLIGATION_FAILURE_CLASS.get(kind, "descent_failure")
            step["failureClass"] = failure_class
            step["lawRef"] = LAW_REF.get(failure_class, "GATE-3.3")
            if hint_missing:
                step["missingHint"] = hint
            classes.add(failure_class)
        steps.append(step)
    return {
        "mode": "normalized",
        "binding": binding,
        "outcome": "rejected" if classes else "accepted",
        "steps": steps,
        "failureClasses": sorted(classes),
    }


def validate_proposal(raw: Any) -> dict[str, Any]:
    """`{canonical, digest, kcirRef, obligations, discharge}` as `instruction-check` prints it."""
    canonical = canonical_proposal(raw)
    rows = obligations(canonical)
    return {
        "canonical": canonical,
        "digest": proposal_digest(canonical),
        "kcirRef": kcir_ref(canonical),
        "obligations": rows,
        "discharge": discharge(canonical, rows),
    }
