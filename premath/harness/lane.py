"""The worker lane's mutation authority: which mode lets a loop change issue memory, until when.

The reference reads these values from its control-plane contract (specs/harness-loop.md, D5-7):
active epoch 2026-02; modes `instruction-linked` (default) and `human-override` (an override that
needs a reason and is supported until epoch 2026-06). Its direct-CLI loop refuses the default
mode. Ours accepts it (divergence D5-7): every mutation our loop makes is gated by a join-check
witness bound to the step's policy ref, which is what "instruction-linked" asks for.
"""

from __future__ import annotations

from dataclasses import dataclass

from premath.errors import InvalidUsage

ACTIVE_EPOCH = "2026-02"
DEFAULT_MODE = "instruction-linked"
HUMAN_OVERRIDE = "human-override"
ALLOWED_MODES = (DEFAULT_MODE, HUMAN_OVERRIDE)
# mode -> (supportUntilEpoch, requiresReason)
COMPATIBILITY_OVERRIDES = {HUMAN_OVERRIDE: ("2026-06", True)}


@dataclass(frozen=True, slots=True)
class MutationAuthority:
    mode: str
    reason: str
    active_epoch: str
    support_until: str | None

    def describe(self) -> str:
        """The reference's `mode=…;reason=…;active_epoch=…;support_until=…` summary tail."""
        return (
            f"mode={self.mode};reason={self.reason};active_epoch={self.active_epoch};"
            f"support_until={self.support_until or 'none'}"
        )


def _epoch(value: str, label: str) -> tuple[int, int]:
    year, dash, month = value.partition("-")
    if not (dash and year.isdigit() and month.isdigit() and 1 <= int(month) <= 12):
        raise InvalidUsage(f"{label} must be an epoch YYYY-MM (got {value!r})")
    return int(year), int(month)


def resolve_mutation_authority(
    mode: str | None, reason: str | None, active_epoch: str = ACTIVE_EPOCH
) -> MutationAuthority:
    """Check the requested mode; refusals are usage errors (exit 2), as in the reference."""
    chosen = (mode or "").strip() or DEFAULT_MODE
    why = (reason or "").strip()
    if chosen not in ALLOWED_MODES:
        raise InvalidUsage(
            f"mutation mode {chosen!r} is not allowed (expected one of: {', '.join(ALLOWED_MODES)})"
        )
    override = COMPATIBILITY_OVERRIDES.get(chosen)
    if override is None:
        return MutationAuthority(chosen, why, active_epoch, None)
    support_until, requires_reason = override
    if requires_reason and not why:
        raise InvalidUsage(f"--mutation-mode {chosen} requires a non-empty --override-reason")
    if _epoch(active_epoch, "active epoch") > _epoch(support_until, "supportUntilEpoch"):
        raise InvalidUsage(
            f"mutation mode {chosen} expired: active epoch {active_epoch} is past its support "
            f"window (supportUntil {support_until}); use {DEFAULT_MODE}"
        )
    return MutationAuthority(chosen, why, active_epoch, support_until)
