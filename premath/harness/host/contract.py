"""The control-plane contract fields the host API reads (agent-surface.md §3.4).

Every other field of the contract is ignored. The default contract is the repository's
`specs/premath/draft/CONTROL-PLANE-CONTRACT.json`; where a repository has none, the copy shipped
with premath is used (docs/divergences.md D13-1).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from premath.harness.host.startup import StartupError, read_json
from premath.text import rust_trim

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DEFAULT_CONTRACT_PATH = "specs/premath/draft/CONTROL-PLANE-CONTRACT.json"
BUILTIN_CONTRACT_PATH = Path(__file__).resolve().parents[2] / "data" / "control-plane-contract.json"
DEFAULT_BINDING_MISMATCH = "control_plane_host_action_binding_mismatch"
DEFAULT_CONTRACT_UNBOUND = "control_plane_host_action_contract_unbound"
DEFAULT_PREFLIGHT_PROFILE = "cp.control.site.v0"


@dataclass(frozen=True)
class HostContract:
    operation_ids: dict[str, str | None]
    """Action -> its row's trimmed `operationId` (None: the row is present but unbound)."""
    mcp_only: frozenset[str]
    binding_mismatch_class: str
    contract_unbound_class: str
    preflight_profile: str
    policy_prefix: str | None
    allowed_profiles: frozenset[str]


def _get(document: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(document, dict):
            return None
        document = document.get(key)
    return document


def _text(value: Any) -> str | None:
    return rust_trim(value) or None if isinstance(value, str) else None


def resolve_contract_path(given: str | None, repo_root: str = ".") -> str:
    """The given path; else the repository's contract; else the one shipped with premath."""
    if given is not None:
        return given
    in_repo = os.path.join(repo_root, DEFAULT_CONTRACT_PATH)
    if os.path.exists(in_repo):
        return DEFAULT_CONTRACT_PATH if repo_root == "." else in_repo
    return str(BUILTIN_CONTRACT_PATH)


def load_contract(path: str) -> Any:
    return read_json(path, "control-plane contract", struct=False)


def host_contract(document: Any) -> HostContract:
    surface = _get(document, "hostActionSurface")
    rows = _get(surface, "requiredActions")
    if not isinstance(rows, dict):
        raise StartupError(
            "control-plane contract missing hostActionSurface.requiredActions",
            "scheme_eval.invalid_program",
        )
    mcp_only = _get(surface, "mcpOnlyHostActions")
    kcir_profile = _text(_get(document, "controlPlaneKcirMappings", "profileId"))
    bundle_profile = _text(_get(document, "controlPlaneBundleProfile", "profileId"))
    site_profile = _text(_get(document, "controlPlaneSite", "profileId"))
    return HostContract(
        operation_ids={action: _text(_get(row, "operationId")) for action, row in rows.items()},
        mcp_only=frozenset(
            rust_trim(item)
            for item in (mcp_only if isinstance(mcp_only, list) else [])
            if isinstance(item, str)
        ),
        binding_mismatch_class=_text(_get(surface, "failureClasses", "bindingMismatch"))
        or DEFAULT_BINDING_MISMATCH,
        contract_unbound_class=_text(_get(surface, "failureClasses", "contractUnbound"))
        or DEFAULT_CONTRACT_UNBOUND,
        preflight_profile=kcir_profile or site_profile or DEFAULT_PREFLIGHT_PROFILE,
        policy_prefix=_text(_get(document, "ciInstructionPolicy", "policyDigestPrefix")),
        allowed_profiles=frozenset(p for p in (bundle_profile, kcir_profile) if p),
    )
