"""An instruction envelope under the repository's `policy-ci-v1`, for the pipeline tests."""

from typing import Any

POLICY_CI = "pol1_4ba916ce38da5c5607eb7f41d963294b34b644deb1fa6d55e133b072ca001b39"


def envelope(**overrides: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "schema": 1,
        "intent": "Gate an issue update.",
        "scope": {"kind": "repo", "target": "premath"},
        "instructionType": "ci.gate.check",
        "normalizerId": "normalizer.ci.v1",
        "policyDigest": POLICY_CI,
        "requestedChecks": ["ci-wiring-check", "test"],
        "capabilityClaims": ["capabilities.change_morphisms", "capabilities.change_morphisms.all"],
    }
    document.update(overrides)
    return document
