"""`premath.host_effect.v0`: digests, refs and step ids of one executed call (§3.7)."""

from __future__ import annotations

from premath.harness.instruction.digests import stable_hash

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

EFFECT_SCHEMA = "premath.host_effect.v0"


def args_digest(args: Any) -> str:
    """`he1_` + sha256 of the canonical JSON of the call's args."""
    return "he1_" + stable_hash(args)


def sanitize(value: str) -> str:
    """Lowercase ASCII alphanumerics, `-`, `_` and `.` kept, anything else `_`; `x` if empty."""
    chars = (
        ch.lower() if ch.isascii() and ch.isalnum() else ch if ch in "-_." else "_" for ch in value
    )
    return "".join(chars).strip("_") or "x"


def host_effect_ref(action: str, digest: str, index: int) -> str:
    return f"host-effect://scheme-eval/{sanitize(action)}/{digest}/{index}"


def step_id(prefix: str, index: int, call_id: str, action: str, digest: str) -> str:
    return f"{prefix}.{index}.{sanitize(call_id)}.{sanitize(action + '.' + digest)}"


def rejection(failure_class: str, diagnostic: str) -> dict[str, Any]:
    return {
        "schema": 1,
        "result": "rejected",
        "failureClasses": [failure_class],
        "diagnostic": diagnostic,
    }


def payload_failure_classes(payload: Any) -> list[str]:
    classes = payload.get("failureClasses") if isinstance(payload, dict) else None
    return [item for item in classes if isinstance(item, str)] if isinstance(classes, list) else []
