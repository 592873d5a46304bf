"""The feature ledger: read, upsert (locked, atomic, validated), check and next-feature projection.

Behaviour follows specs/harness-feature-ledger.md; divergence D2-11 (write refuses a ledger
check rejects).
"""

from __future__ import annotations

import os

from premath.errors import InputInvalid
from premath.harness.artifact_io import load_artifact, save_artifact
from premath.lean import datetime
from premath.models.feature_ledger import (
    CHECK_KIND,
    FEATURE_STATUSES,
    LEDGER_KIND,
    LEDGER_SCHEMA,
    ledger_in_field_order,
    parse_ledger,
    row_in_field_order,
)
from premath.store.locks import artifact_lock
from premath.text import clean_optional, normalize_refs, rust_trim
from premath.timefmt import format_seconds_z

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DEFAULT_LEDGER_PATH = ".premath/harness_feature_ledger.json"
_CLASS = "harness_feature_ledger."


def load_ledger(path: str, error_prefix: str) -> dict[str, Any]:
    """The ledger at `path` with its header validated; errors read `<error_prefix><detail>`."""
    return load_artifact(
        path,
        parse_ledger,
        read_prefix=f"{error_prefix}unable to read {path}: ",
        parse_prefix=f"{error_prefix}unable to parse {path}: ",
        invalid_prefix=error_prefix,
    )


def read_prefix(path: str) -> str:
    return f"failed to read harness feature ledger {path}: "


def read_ledger_document(path: str) -> dict[str, Any]:
    """`harness-feature read`: the ledger, its header validated (its rows are `check`'s job)."""
    return {
        "action": "harness-feature.read",
        "ledger": load_ledger(path, read_prefix(path)),
        "path": path,
    }


def _finding(cls: str, message: str, feature_id: str | None = None) -> dict[str, str]:
    finding = {"class": _CLASS + cls}
    if feature_id is not None:
        finding["featureId"] = feature_id
    finding["message"] = message
    return finding


def evaluate_ledger(ledger: dict[str, Any], require_closure: bool) -> dict[str, Any]:
    """The check's findings, counts and next feature, rules in order (harness-feature-ledger.md)."""
    errors: list[dict[str, str]] = []
    if not rust_trim(ledger["updatedAt"]):
        errors.append(_finding("updated_at.empty", "ledger.updatedAt must be non-empty"))
    features = ledger["features"]
    if not features:
        errors.append(_finding("empty", "ledger.features must contain at least one row"))
    counts = dict.fromkeys(FEATURE_STATUSES, 0)
    open_ids: dict[str, list[str]] = {"in_progress": [], "pending": []}
    seen: set[str] = set()
    for row in features:
        feature_id = rust_trim(row["featureId"])
        if not feature_id:
            errors.append(_finding("feature_id.empty", "featureId must be non-empty"))
            continue
        if feature_id in seen:
            errors.append(_finding("feature_id.duplicate", "featureId must be unique", feature_id))
        seen.add(feature_id)
        if not rust_trim(row["updatedAt"]):
            errors.append(
                _finding(
                    "feature.updated_at.empty", "feature.updatedAt must be non-empty", feature_id
                )
            )
        status = row["status"]
        if status in counts:
            counts[status] += 1
            if status in open_ids:
                open_ids[status].append(feature_id)
        else:
            errors.append(
                _finding(
                    "status.invalid",
                    f"feature status `{status}` is invalid "
                    "(expected pending|in_progress|blocked|completed)",
                    feature_id,
                )
            )
        instruction_refs = row.get("instructionRefs", [])
        verification_refs = row.get("verificationRefs", [])
        if status == "completed" and not verification_refs:
            errors.append(
                _finding(
                    "completed_missing_verification_ref",
                    "completed feature requires at least one verificationRef",
                    feature_id,
                )
            )
        if any(not rust_trim(ref) for ref in instruction_refs):
            errors.append(
                _finding(
                    "instruction_ref.empty", "instructionRef entries must be non-empty", feature_id
                )
            )
        if any(not rust_trim(ref) for ref in verification_refs):
            errors.append(
                _finding(
                    "verification_ref.empty",
                    "verificationRef entries must be non-empty",
                    feature_id,
                )
            )
    if counts["in_progress"] > 1:
        errors.append(
            _finding("in_progress.non_contractible", "at most one feature may be in_progress")
        )
    candidates = open_ids["in_progress"] or open_ids["pending"]
    next_feature_id = min(candidates) if candidates else None
    closure_complete = not errors and bool(features) and counts["completed"] == len(features)
    if require_closure and not closure_complete:
        errors.append(
            _finding("closure_incomplete", "require-closure set but ledger is not closed")
        )
    return {
        "errors": errors,
        "failureClasses": sorted({error["class"] for error in errors}),
        "result": "rejected" if errors else "accepted",
        "nextFeatureId": next_feature_id,
        "summary": {
            "featureCount": len(features),
            "pendingCount": counts["pending"],
            "inProgressCount": counts["in_progress"],
            "blockedCount": counts["blocked"],
            "completedCount": counts["completed"],
            "closureComplete": closure_complete,
        },
    }


def check_ledger(path: str, require_closure: bool) -> dict[str, Any]:
    """The `premath.harness.feature_ledger.check.v1` report (exit 1 when rejected)."""
    evaluation = evaluate_ledger(load_ledger(path, read_prefix(path)), require_closure)
    return {
        "action": "harness-feature.check",
        "path": path,
        "checkKind": CHECK_KIND,
        "requireClosure": require_closure,
        **evaluation,
    }


def project_next_feature(path: str, error_prefix: str) -> dict[str, Any] | None:
    """Next feature, closure and count; None when the ledger is missing; rejected is an error."""
    if not os.path.exists(path):
        return None
    evaluation = evaluate_ledger(load_ledger(path, error_prefix), require_closure=False)
    if evaluation["result"] == "rejected":
        classes = ", ".join(evaluation["failureClasses"])
        raise InputInvalid(f"{error_prefix}ledger rejected: {classes}")
    return {
        "nextFeatureId": evaluation["nextFeatureId"],
        "closureComplete": evaluation["summary"]["closureComplete"],
        "featureCount": evaluation["summary"]["featureCount"],
    }


def next_feature(path: str) -> dict[str, Any]:
    projection = project_next_feature(path, f"failed to compute next feature from {path}: ")
    return {
        "action": "harness-feature.next",
        "path": path,
        "exists": projection is not None,
        "nextFeatureId": projection["nextFeatureId"] if projection else None,
        "closureComplete": projection["closureComplete"] if projection else None,
        "featureCount": projection["featureCount"] if projection else None,
    }


def _upserted_row(
    existing: dict[str, Any] | None,
    feature_id: str,
    status: str,
    issue_id: str | None,
    summary: str | None,
    instruction_refs: list[str],
    verification_refs: list[str],
    stamp: str,
) -> dict[str, Any]:
    """specs/harness-feature-ledger.md: blank text clears, an empty normalised ref list keeps."""
    fields = dict(existing or {"featureId": feature_id})
    fields["status"] = status
    if existing is None or issue_id is not None:
        fields["issueId"] = clean_optional(issue_id)
    if existing is None or summary is not None:
        fields["summary"] = clean_optional(summary)
    if existing is None or instruction_refs:
        fields["instructionRefs"] = instruction_refs
    if existing is None or verification_refs:
        fields["verificationRefs"] = verification_refs
    fields["updatedAt"] = stamp
    return row_in_field_order(fields)


def write_feature(
    path: str,
    *,
    feature_id: str,
    status: str,
    now: datetime,
    lock_timeout_s: float,
    issue_id: str | None = None,
    summary: str | None = None,
    session_ref: str | None = None,
    instruction_refs: tuple[str, ...] = (),
    verification_refs: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Upsert one feature row; the `harness-feature.write` document holds the ledger as written.

    Unlike the reference (which writes anything), a ledger that `check` would reject is refused
    and the file left as it was (divergence D2-11): otherwise `next` and `bootstrap` break.
    """
    wanted_id = rust_trim(feature_id)
    if not wanted_id:
        if os.path.exists(path):
            load_ledger(path, read_prefix(path))
        raise InputInvalid("feature-id must be non-empty")
    with artifact_lock(path, lock_timeout_s):
        stamp = format_seconds_z(now)
        if os.path.exists(path):
            ledger = dict(load_ledger(path, read_prefix(path)))
        else:
            ledger = {
                "schema": LEDGER_SCHEMA,
                "ledgerKind": LEDGER_KIND,
                "updatedAt": stamp,
                "features": [],
            }
        if session_ref is not None:
            ledger["sessionRef"] = clean_optional(session_ref)
        rows = list(ledger["features"])
        index = next((i for i, row in enumerate(rows) if row["featureId"] == wanted_id), None)
        row = _upserted_row(
            rows[index] if index is not None else None,
            wanted_id,
            status,
            issue_id,
            summary,
            normalize_refs(instruction_refs),
            normalize_refs(verification_refs),
            stamp,
        )
        if index is None:
            rows.append(row)
        else:
            rows[index] = row
        rows.sort(key=lambda r: r["featureId"])
        ledger["features"] = rows
        ledger["updatedAt"] = stamp
        ledger = ledger_in_field_order(ledger)
        evaluation = evaluate_ledger(ledger, require_closure=False)
        if evaluation["result"] == "rejected":
            classes = ", ".join(evaluation["failureClasses"])
            raise InputInvalid(
                f"refusing to write harness feature ledger {path}: the result would be rejected "
                f"by `harness-feature check` ({classes}); fix the ledger or the row, then retry"
            )
        save_artifact(path, ledger, write_prefix=f"failed to write harness feature ledger {path}: ")
    return {
        "action": "harness-feature.write",
        "featureId": wanted_id,
        "ledger": ledger,
        "path": path,
    }
