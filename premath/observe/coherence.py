"""The surface's `coherence` projection (observation.md §4.2), computed as the reference does.

Each part is a plain JSON object with sorted keys. Issue rows are the facts of
`inputs.InputReader.issue_rows`. Quirks kept for wire compatibility (observation.md §11: 18-25)
are the reference's and named where they happen.
"""

from __future__ import annotations

import copy
import functools
import math
from collections import Counter
from typing import cast

from premath.issues.graph import find_any_cycle
from premath.observe.facts import Document, Instant, IssueFacts, instant
from premath.store.issues_file import IssueMap
from premath.timefmt import format_autosi_z

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

BLOCKING_TYPES = frozenset({"blocks", "parent-child", "conditional-blocks", "waits-for"})
ACTIVE_STATUSES = ("open", "in_progress")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def round_half_away(value: float, places: int) -> float:
    """Rust's `(value * 10^p).round() / 10^p` in binary64 (Python's `round` rounds half to
    even on the decimal value: 3.125 -> 3.12 where the reference prints 3.13)."""
    factor = 10.0**places
    scaled = value * factor
    whole = math.floor(abs(scaled))
    if abs(scaled) - whole >= 0.5:
        whole += 1
    return math.copysign(whole, scaled) / factor


def format_reference_time(moment: Instant) -> str:
    """`YYYY-MM-DDTHH:MM:SSZ`: the fraction dropped (quirk 22), a leap second printed `:60`."""
    seconds, nanos = moment
    printed = format_autosi_z(seconds * 1_000_000_000)
    if nanos >= 1_000_000_000:
        printed = printed[:17] + "60Z"
    return printed


def policy_drift(
    delta: Document | None,
    required: Document | None,
    decision: Document | None,
    instructions: list[Document],
) -> Document:
    rows = [row for row in (delta, required, decision) if row is not None]
    policies = sorted(
        {row["projectionPolicy"] for row in (delta, required) if row and row["projectionPolicy"]}
    )
    typed = sorted({d for row in rows if (d := row.get("typedCoreProjectionDigest"))})
    aliases = sorted({d for row in rows if (d := row.get("projectionDigest"))})
    instruction_policies = sorted({r["policyDigest"] for r in instructions if r["policyDigest"]})
    missing = sorted({r["instructionId"] for r in instructions if not r["policyDigest"]})
    drift = [
        name
        for name, values in (
            ("projection_policy_drift", policies),
            ("projection_digest_drift", typed),
            ("instruction_policy_drift", instruction_policies),
        )
        if len(values) > 1
    ]
    return {
        "aliasProjectionDigests": aliases,
        "driftClasses": drift,
        "driftDetected": bool(drift),
        "instructionPolicyDigests": instruction_policies,
        "missingInstructionPolicyIds": missing,
        "projectionDigests": typed,
        "projectionPolicies": policies,
        "typedCoreProjectionDigests": list(typed),
    }


def _classification_state(row: Document) -> Any:
    classification = row["instructionClassification"]
    return classification.get("state") if isinstance(classification, dict) else None


def instruction_typing(instructions: list[Document]) -> Document:
    """Distinct ids per state over all rows, duplicates included in the count (quirk 24)."""
    unknown = {r["instructionId"] for r in instructions if _classification_state(r) == "unknown"}
    typed = {r["instructionId"] for r in instructions if _classification_state(r) == "typed"}
    unknown_rejected = {
        r["instructionId"]
        for r in instructions
        if _classification_state(r) == "unknown" and r["verdictClass"] == "rejected"
    }
    count = len(instructions)
    rate = len(unknown) / count if count else 0.0
    return {
        "instructionCount": count,
        "typedCount": len(typed),
        "unknownCount": len(unknown),
        "unknownInstructionIds": sorted(unknown),
        "unknownRate": round_half_away(rate, 6),
        "unknownRatePercent": round_half_away(rate * 100.0, 2),
        "unknownRejectedCount": len(unknown_rejected),
    }


def proposal_reject_classes(instructions: list[Document]) -> Document:
    counts: Counter[str] = Counter()
    ids = set()
    for row in instructions:
        classes = {name for name in row["failureClasses"] if name.startswith("proposal_")}
        if classes:
            ids.add(row["instructionId"])
            counts.update(classes)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return {
        "classCounts": {name: counts[name] for name in sorted(counts)},
        "instructionIds": sorted(ids),
        "topClasses": [name for name, _ in ranked[:5]],
        "totalRejectCount": sum(counts.values()),
    }


def is_blocked(row: IssueFacts, statuses: dict[str, str | None]) -> bool:
    """A blocking dependency without a target, or on an issue that is not `closed`, blocks."""
    for dependency in row.dependencies:
        if dependency.kind not in BLOCKING_TYPES:
            continue
        if dependency.target is None or statuses.get(dependency.target) != "closed":
            return True
    return False


def issue_partition(rows: list[IssueFacts]) -> Document:
    """Open issues split into ready and blocked; the gap lists are empty by construction, so
    the partition is always coherent (quirk 18)."""
    statuses = {row.id: row.status for row in rows}
    ready: list[str] = []
    blocked: list[str] = []
    for row in rows:
        if row.status == "open":
            (blocked if is_blocked(row, statuses) else ready).append(row.id)
    return {
        "blockedCount": len(blocked),
        "blockedIssueIds": blocked,
        "isCoherent": True,
        "openIssueCount": len(ready) + len(blocked),
        "openPartitionGapIssueIds": [],
        "overlapIssueIds": [],
        "readyCount": len(ready),
        "readyIssueIds": ready,
    }


def scope_status(row: IssueFacts) -> str:
    """The status as the cycle scopes read it: ASCII lower-cased (quirk 19), unlike the
    partition, lease and worker checks, which compare it as stored."""
    return (row.status or "").translate(_ASCII_LOWER)


GraphShape = tuple[tuple[str, str, tuple[str, ...]], ...]


def _cycle(shape: GraphShape, scope: str) -> list[str] | None:
    """The reference's first cycle over edges of every type (quirk 20), via issue memory's
    search: the shape becomes minimal issue rows holding their status and edges."""
    shim = {
        issue_id: {
            "status": status,
            "dependencies": [
                {"issue_id": issue_id, "depends_on_id": target, "type": ""} for target in targets
            ],
        }
        for issue_id, status, targets in shape
    }
    return find_any_cycle(cast(IssueMap, shim), "active" if scope == "active" else "full")


@functools.lru_cache(maxsize=4)
def _integrity(shape: GraphShape) -> Document:
    active_count = sum(1 for _, status, _ in shape if status in ACTIVE_STATUSES)
    scopes = {}
    for scope, count in (("active", active_count), ("full", len(shape))):
        path = _cycle(shape, scope)
        scopes[scope] = {
            "cyclePath": path,
            "graphScope": scope,
            "hasCycle": path is not None,
            "issueCount": count,
        }
    return scopes


def dependency_integrity(rows: list[IssueFacts]) -> Document:
    """Cycles in the active and full scopes; the search runs again only when the graph's
    shape (ids, scope statuses, targets) changed, not on every title or lease edit."""
    shape = tuple(
        (
            row.id,
            scope_status(row),
            tuple(d.target for d in row.dependencies if d.target is not None),
        )
        for row in rows
    )
    return copy.deepcopy(_integrity(shape))


def reference_time(instructions: list[Document], rows: list[IssueFacts]) -> Instant | None:
    """The latest input timestamp, not the clock (quirk 21)."""
    candidates = []
    for instruction in instructions:
        found = instant(instruction.get("runFinishedAt")) or instant(
            instruction.get("runStartedAt")
        )
        if found is not None:
            candidates.append(found)
    candidates.extend(row.updated for row in rows if row.updated is not None)
    return max(candidates, default=None)


def _leases(rows: list[IssueFacts], reference: Instant | None) -> tuple[set[str], ...]:
    """Issue ids with a lease object split into active, stale and unknown evaluations."""
    active: set[str] = set()
    stale: set[str] = set()
    unknown: set[str] = set()
    for row in rows:
        if row.lease is None:
            continue
        expiry = row.lease.expiry
        if reference is None or expiry is None:
            unknown.add(row.id)
        elif expiry <= reference:
            stale.add(row.id)
        else:
            active.add(row.id)
    return active, stale, unknown


def lease_health(rows: list[IssueFacts], reference: Instant | None) -> Document:
    active, stale, unknown = _leases(rows, reference)
    contended = set()
    for row in rows:
        if row.lease is not None and row.id in active:
            owner, assignee = row.lease.owner or "", row.assignee or ""
            if row.status != "in_progress" or assignee != owner:
                contended.add(row.id)  # a closed issue with a live lease too (quirk 23)
    return {
        "activeLeaseCount": len(active),
        "contendedCount": len(contended),
        "contendedIssueIds": sorted(contended),
        "leaseIssueCount": len(active) + len(stale) + len(unknown),
        "referenceTime": None if reference is None else format_reference_time(reference),
        "staleCount": len(stale),
        "staleIssueIds": sorted(stale),
        "unknownEvaluationCount": len(unknown),
        "unknownEvaluationIssueIds": sorted(unknown),
    }


def worker_lane_throughput(rows: list[IssueFacts], reference: Instant | None) -> Document:
    in_progress = [row for row in rows if row.status == "in_progress"]
    workers = Counter(row.assignee for row in in_progress if row.assignee is not None)
    active, stale, unknown = _leases(rows, reference)
    return {
        "activeLeaseCount": len(active),
        "activeLeaseIssueIds": sorted(active),
        "inProgressCount": len(in_progress),
        "perWorkerInProgress": [
            {"inProgressCount": workers[worker], "worker": worker} for worker in sorted(workers)
        ],
        "referenceTime": None if reference is None else format_reference_time(reference),
        "staleLeaseCount": len(stale),
        "staleLeaseIssueIds": sorted(stale),
        "unassignedInProgressCount": len(in_progress) - sum(workers.values()),
        "unknownLeaseEvaluationCount": len(unknown),
        "unknownLeaseEvaluationIssueIds": sorted(unknown),
        "workerCount": len(workers),
    }


def coherence(
    delta: Document | None,
    required: Document | None,
    decision: Document | None,
    instructions: list[Document],
    rows: list[IssueFacts],
) -> Document:
    """The whole projection with its attention reasons, in the reference's fixed order."""
    reference = reference_time(instructions, rows)
    drift = policy_drift(delta, required, decision, instructions)
    typing = instruction_typing(instructions)
    proposals = proposal_reject_classes(instructions)
    partition = issue_partition(rows)
    integrity = dependency_integrity(rows)
    leases = lease_health(rows, reference)
    reasons = [
        reason
        for reason, holds in (
            ("policy_drift", drift["driftDetected"]),
            ("instruction_unknown_classification", typing["unknownCount"] > 0),
            ("proposal_reject_classes_present", proposals["totalRejectCount"] > 0),
            ("issue_partition_incoherent", not partition["isCoherent"]),
            ("dependency_cycle_active", integrity["active"]["hasCycle"]),
            ("stale_claims", leases["staleCount"] > 0),
            ("contended_claims", leases["contendedCount"] > 0),
        )
        if holds
    ]
    return {
        "attentionReasons": reasons,
        "dependencyIntegrity": integrity,
        "instructionTyping": typing,
        "issuePartition": partition,
        "leaseHealth": leases,
        "needsAttention": bool(reasons),
        "policyDrift": drift,
        "proposalRejectClasses": proposals,
        "workerLaneThroughput": worker_lane_throughput(rows, reference),
    }
