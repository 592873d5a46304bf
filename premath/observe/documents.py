"""Text renderings of the observation commands (observation.md §2.4, §6.3): wire output too."""

from __future__ import annotations

from premath.observe.builder import BuildResult
from premath.observe.schema import Document
from premath.observe.views import ObserveQuery

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def build_line(result: BuildResult) -> str:
    summary = result.surface.summary
    return (
        f"[observation-surface] OK (state={summary['state']}, "
        f"needsAttention={'true' if summary['needsAttention'] else 'false'}, "
        f"attentionReasons={result.attention_reason_count()}, out={result.paths.out_json})"
    )


def _yes_no(value: bool) -> str:
    return "yes" if value else "no"


def _pointer(root: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(root, dict):
            return None
        root = root.get(key)
    return root


def _boolean(root: Any, *keys: str) -> bool | None:
    value = _pointer(root, *keys)
    return value if isinstance(value, bool) else None


def _integer(root: Any, *keys: str) -> int | None:
    """serde's `as_i64`: an integer within i64, never a float or a boolean."""
    value = _pointer(root, *keys)
    if isinstance(value, int) and not isinstance(value, bool) and -(1 << 63) <= value < (1 << 63):
        return value
    return None


def coherence_lines(coherence: Any) -> list[str]:
    """Printed whenever coherence is present, whatever its shape (quirk 29)."""
    lines = []
    drift = _boolean(coherence, "policyDrift", "driftDetected")
    if drift is not None:
        lines.append(f"  policy drift: {_yes_no(drift)}")
    rate = _pointer(coherence, "instructionTyping", "unknownRatePercent")
    if isinstance(rate, int | float) and not isinstance(rate, bool):
        lines.append(f"  unknown classification rate: {float(rate):.2f}%")
    rejects = _integer(coherence, "proposalRejectClasses", "totalRejectCount")
    if rejects is not None:
        lines.append(f"  proposal reject classes: {rejects}")
    coherent = _boolean(coherence, "issuePartition", "isCoherent")
    if coherent is not None:
        lines.append(f"  ready/blocked partition coherent: {_yes_no(coherent)}")
    active = _boolean(coherence, "dependencyIntegrity", "active", "hasCycle") or False
    full = _boolean(coherence, "dependencyIntegrity", "full", "hasCycle") or False
    lines.append(f"  dependency cycles (active/full): {_yes_no(active)}/{_yes_no(full)}")
    stale = _integer(coherence, "leaseHealth", "staleCount") or 0
    contended = _integer(coherence, "leaseHealth", "contendedCount") or 0
    if stale > 0 or contended > 0:
        lines.append(f"  stale/contended claims: {stale}/{contended}")
    workers = _integer(coherence, "workerLaneThroughput", "workerCount") or 0
    in_progress = _integer(coherence, "workerLaneThroughput", "inProgressCount") or 0
    unassigned = _integer(coherence, "workerLaneThroughput", "unassignedInProgressCount") or 0
    if workers > 0 or in_progress > 0:
        counts = f"{workers}/{in_progress}/{unassigned}"
        lines.append(f"  worker-lane WIP (workers/in-progress/unassigned): {counts}")
    return lines


def _optional(label: str, value: str | None) -> list[str]:
    return [] if value is None else [f"  {label}: {value}"]


def latest_text(view: Document) -> str:
    summary = view["summary"]
    lines = [
        "premath observe latest",
        f"  state: {summary['state']}",
        f"  needs attention: {_yes_no(summary['needsAttention'])}",
        *_optional("projection", summary["latestProjectionDigest"]),
        *_optional("latest instruction", summary["latestInstructionId"]),
        *_optional("top failure", summary["topFailureClass"]),
    ]
    if "coherence" in summary:
        lines += coherence_lines(summary["coherence"])
    return "\n".join(lines + live_lines(summary.get("live")))


def live_lines(live: Document | None) -> list[str]:
    """The live attention's lines (D30a-2); none for a surface without it."""
    if live is None:
        return []
    window = live["recentWindow"]
    reasons = ", ".join(live["attentionReasons"]) or "(none)"
    return [
        f"  live attention ({live['checkedAt']}): {reasons}",
        f"  stale leases now: {', '.join(live['staleLeaseIssueIds']) or '(none)'}",
        f"  open escalations: {', '.join(live['escalationIssueIds']) or '(none)'}",
        f"  recent steps: {window['failedSteps']}/{window['steps']} failed"
        + (f" (top {window['topFailureClass']})" if window["topFailureClass"] else ""),
        f"  kpi decision: {live['kpiDecision'] or '(none)'}",
    ]


def needs_attention_text(view: Document) -> str:
    lines = [
        "premath observe needs_attention",
        f"  state: {view['state']}",
        f"  needs attention: {_yes_no(view['needsAttention'])}",
        *_optional("top failure", view["topFailureClass"]),
        *_optional("projection", view["latestProjectionDigest"]),
        *_optional("latest instruction", view["latestInstructionId"]),
    ]
    if view["coherence"] is not None:
        lines += coherence_lines(view["coherence"])
    return "\n".join(lines + live_lines(view.get("live")))


def _checks(values: list[str]) -> str:
    return ", ".join(values) if values else "(none)"


def instruction_text(instruction_id: str, row: Document) -> str:
    return "\n".join(
        (
            f"premath observe instruction {instruction_id}",
            f"  verdict: {row['verdictClass'] or '(missing)'}",
            f"  required checks: {_checks(row['requiredChecks'])}",
            f"  executed checks: {_checks(row['executedChecks'])}",
        )
    )


def projection_text(match: str, view: Document) -> str:
    return "\n".join(
        (
            f"premath observe projection {view['projectionDigest']}",
            f"  match mode: {match}",
            f"  required witness: {_yes_no(view['required'] is not None)}",
            f"  delta snapshot: {_yes_no(view['delta'] is not None)}",
            f"  decision: {_yes_no(view['decision'] is not None)}",
        )
    )


def view_text(query: ObserveQuery, view: Document) -> str:
    """`observe`'s text for the view `query` answered."""
    if query.mode == "latest":
        return latest_text(view)
    if query.mode == "needs_attention":
        return needs_attention_text(view)
    if query.mode == "instruction":
        return instruction_text(query.key, view)
    return projection_text(query.match, view)
