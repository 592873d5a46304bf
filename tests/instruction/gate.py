"""The MCP mutation gate's witness checks, as agent-surface.md §1.6 documents them.

Written from the table, independently of the MCP server, so a witness we write can be checked
against what the gate will read: the first failing check wins and names its message.
"""

import json
from pathlib import Path
from typing import Any

ALLOWED_POLICY_DIGESTS = {
    "pol1_4ba916ce38da5c5607eb7f41d963294b34b644deb1fa6d55e133b072ca001b39",
    "pol1_1ab3e7f398a472c2cf0f3fbd7ead7ece7bd74e836cbde924f1e33f02895d18ab",
}
JOIN_GATED = {"issue.discover", "issue.update", "dep.add", "dep.remove", "dep.replace"}


def _strings(value: Any) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def gate_refusal(repo_root: Path, instruction_id: str, action: str, policy: str) -> str | None:
    """None when the gate lets `action` through citing `instruction_id`, else its message."""
    path = repo_root / "artifacts" / "ciwitness" / f"{instruction_id}.json"
    if not path.exists():
        return f"instruction witness not found: {path}"
    witness = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(witness.get("instructionId"), str):
        return f"instruction witness missing `instructionId`: {path}"
    if witness["instructionId"] != instruction_id:
        return "instruction witness id mismatch"
    if witness.get("verdictClass") != "accepted":
        return f"instruction witness is not accepted for `{instruction_id}`"
    if policy == "open":
        return None
    digest = witness.get("policyDigest")
    if not isinstance(digest, str):
        return "missing `policyDigest`"
    if digest not in ALLOWED_POLICY_DIGESTS:
        return f"instruction policyDigest `{digest}` is not scoped for mutation action `{action}`"
    claims = set(_strings(witness.get("capabilityClaims")))
    if "capabilities.change_morphisms" not in claims:
        return "missing required capability claim `capabilities.change_morphisms`"
    claim = "capabilities.change_morphisms." + action.replace(".", "_")
    if claim not in claims and "capabilities.change_morphisms.all" not in claims:
        return f"missing required action capability claim `{claim}`"
    failures = [c.strip() for c in _strings(witness.get("failureClasses")) if c.strip()]
    if failures:
        return f"[failureClass={failures[0]}] instruction witness rejected mutation action"
    if action in JOIN_GATED:
        if not {"joinClosed", "joinFailureClasses", "joinWitnessRef"} & set(witness):
            return "[failureClass=mutation.use_evidence_missing] missing join-gate evidence"
        joins = [c.strip() for c in _strings(witness.get("joinFailureClasses")) if c.strip()]
        if joins:
            return f"[failureClass={joins[0]}] instruction join gate rejected mutation action"
        if witness.get("joinClosed") is not True:
            return "[failureClass=tool.join_incomplete] instruction join gate is not closed"
    return None
