"""premath's contract extension: the host actions the reference's contract leaves unbound.

The reference's `scheme-eval` implements a subset of the contract's action map (issue reads,
`dep.diagnostics`, the lease and fiber transport actions, the vector wrappers). premath also
implements the rest of the map the harness contract names (the REPL Host API section): the
`observe.*` and `instruction.check` reads, `issue.show`, and the instruction-linked mutations.
They are bound by a policy file of their own, `policies/control/host-action-extension-v1.json`,
digest-pinned like the other policies (`pol1_` + sha256 of the canonical file without its
digest, checked on every load).

Which extension is in force (docs/divergences.md D24-1): `--contract-extension PATH`; else the
repository's `policies/control/host-action-extension-v1.json`; else, when the contract in use
is the one premath ships (the repository has none), the copy shipped beside it. A repository
that carries the reference's contract file and not the extension keeps the reference's
behaviour exactly: the added actions are then not allowlisted.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from premath.harness.host.startup import StartupError, read_json
from premath.text import rust_trim

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

EXTENSION_PATH = "policies/control/host-action-extension-v1.json"
BUILTIN_EXTENSION_PATH = (
    Path(__file__).resolve().parents[2] / "data" / "host-action-extension-v1.json"
)
POLICY_KIND = "premath.host_action_extension.v1"
INVALID = "scheme_eval.contract_extension_invalid"
Effect = Literal["read", "mutation"]


@dataclass(frozen=True)
class HostExtension:
    path: str
    policy_id: str
    policy_digest: str
    actions: dict[str, Effect]
    """Action -> its effect class; every bound action has a non-blank `operationId`."""
    operation_ids: dict[str, str]

    def summary(self) -> dict[str, Any]:
        """What the result document says about the extension in force."""
        return {"path": self.path, "policyId": self.policy_id, "policyDigest": self.policy_digest}


def resolve_extension_path(
    given: str | None, *, repo_root: str, builtin_contract: bool
) -> str | None:
    """The extension file in force (module doc), or None: the reference's behaviour."""
    if given is not None:
        return given
    in_repo = os.path.join(repo_root, EXTENSION_PATH)
    if os.path.exists(in_repo):
        return in_repo if repo_root != "." else EXTENSION_PATH
    return str(BUILTIN_EXTENSION_PATH) if builtin_contract else None


def _invalid(path: str, reason: str) -> StartupError:
    return StartupError(f"invalid contract extension {path}: {reason}", INVALID)


def _text(document: dict[str, Any], key: str, path: str) -> str:
    value = document.get(key)
    if not isinstance(value, str) or not rust_trim(value):
        raise _invalid(path, f"{key} must be a non-empty string")
    return rust_trim(value)


def load_extension(path: str, implemented: dict[str, Effect]) -> HostExtension:
    """The extension at `path`, checked: shape, digest, and only actions premath implements,
    each with the effect premath knows it has (a mutation declared `read` would skip the
    mutation evidence)."""
    from premath.harness.retry import policy_digest

    document = read_json(path, "contract extension", struct=True)
    if not isinstance(document, dict):
        raise _invalid(path, "root must be a JSON object")
    if document.get("schema") != 1:
        raise _invalid(path, "schema must be 1")
    if document.get("policyKind") != POLICY_KIND:
        raise _invalid(path, f'policyKind must be "{POLICY_KIND}"')
    policy_id = _text(document, "policyId", path)
    declared = _text(document, "policyDigest", path)
    computed = policy_digest(document)
    if declared != computed:
        raise _invalid(path, f"policyDigest mismatch (declared={declared}, computed={computed})")
    rows = document.get("hostActions")
    if not isinstance(rows, dict) or not rows:
        raise _invalid(path, "hostActions must be a non-empty object")
    actions: dict[str, Effect] = {}
    operations: dict[str, str] = {}
    for action, row in sorted(rows.items()):
        if action not in implemented:
            raise _invalid(path, f"hostActions binds `{action}`, which premath does not implement")
        if not isinstance(row, dict):
            raise _invalid(path, f"hostActions.{action} must be an object")
        operation = row.get("operationId")
        if not isinstance(operation, str) or not rust_trim(operation):
            raise _invalid(path, f"hostActions.{action}.operationId must be a non-empty string")
        effect = row.get("effect")
        if effect != implemented[action]:
            wanted = implemented[action]
            raise _invalid(path, f"hostActions.{action}.effect must be `{wanted}` (got {effect!r})")
        actions[action] = implemented[action]
        operations[action] = rust_trim(operation)
    return HostExtension(path, policy_id, declared, actions, operations)
