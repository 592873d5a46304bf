"""The stdout documents of `issue migrate-events|replay-events|backend-status` and `init`.

Each renders a typed result of its service into the reference's JSON shape (keys are sorted
on output) or its text; a face (CLI, MCP) picks one.
"""

from __future__ import annotations

from premath.issues.backend_status import BackendStatus
from premath.issues.events import Difference, Migration, ReplayReport
from premath.issues.init_layout import InitOutcome, LegacyImport

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def migrate_document(result: Migration) -> dict[str, Any]:
    return {
        "action": "issue.migrate-events",
        "issuesPath": result.issues_path,
        "eventsPath": result.events_path,
        "issueCount": result.issue_count,
        "eventCount": result.event_count,
        "equivalent": True,
    }


def migrate_text(result: Migration) -> str:
    return (
        f"premath issue migrate-events\n  Issues: {result.issues_path}\n"
        f"  Events: {result.events_path}\n  Issue count: {result.issue_count}\n"
        f"  Event count: {result.event_count}\n  Equivalent replay: true"
    )


def _difference(difference: Difference) -> dict[str, Any]:
    return {
        "issueId": difference.issue_id,
        "inExisting": difference.in_existing,
        "inReplay": difference.in_replay,
        "field": difference.field,
    }


def replay_document(result: ReplayReport) -> dict[str, Any]:
    """The reference's document; `firstDifference` (ours, D3-7) when the store was rewritten."""
    document = {
        "action": "issue.replay-events",
        "eventsPath": result.events_path,
        "issuesPath": result.issues_path,
        "cachePath": result.cache_path,
        "cacheHit": result.cache_hit,
        "eventCount": result.event_count,
        "issueCount": result.issue_count,
        "eventStreamRef": result.stream_ref,
        "snapshotRef": result.snapshot_ref,
        "equivalentToExisting": result.equivalent_to_existing,
    }
    if result.difference is not None:
        document["firstDifference"] = _difference(result.difference)
    return document


def replay_text(result: ReplayReport) -> str:
    equivalent = result.equivalent_to_existing
    lines = [
        "premath issue replay-events",
        f"  Events: {result.events_path}",
        f"  Issues: {result.issues_path}",
        f"  Cache: {result.cache_path}",
        f"  Cache hit: {str(result.cache_hit).lower()}",
        f"  Event count: {result.event_count}",
        f"  Issue count: {result.issue_count}",
        f"  Event stream ref: {result.stream_ref}",
        f"  Snapshot ref: {result.snapshot_ref}",
        f"  Equivalent to existing: {'n/a' if equivalent is None else str(equivalent).lower()}",
    ]
    if result.difference is not None:
        lines.append(
            "  First difference: "
            + result.difference.describe(result.issues_path, result.events_path)
        )
    return "\n".join(lines)


def backend_status_document(status: BackendStatus) -> dict[str, Any]:
    canonical, projection, jj = status.canonical, status.projection, status.jj
    return {
        "action": "issue.backend-status",
        "issuesPath": status.issues_path,
        "repoRoot": status.repo_root,
        "canonicalMemory": {
            "kind": "jsonl",
            "path": canonical.path,
            "exists": canonical.exists,
            "snapshotRef": canonical.snapshot_ref,
            "error": canonical.error,
        },
        "queryProjection": {
            "kind": "premath.surreal.issue_projection.v0",
            "path": projection.path,
            "exists": projection.exists,
            "state": projection.state,
            "schema": projection.schema,
            "projectionKind": projection.kind,
            "sourceIssuesPath": projection.source_issues_path,
            "sourcePathMatchesAuthority": projection.source_path_matches_authority,
            "sourceSnapshotRef": projection.source_snapshot_ref,
            "snapshotRefMatchesProjection": projection.snapshot_ref_matches_projection,
            "snapshotRefMatchesAuthority": projection.snapshot_ref_matches_authority,
            "error": projection.error,
        },
        "jj": {
            "state": jj.state,
            "available": jj.available,
            "repoRoot": jj.repo_root,
            "headChangeId": jj.head_change_id,
            "error": jj.error,
        },
    }


def backend_status_text(status: BackendStatus) -> str:
    lines = [
        "premath issue backend-status",
        f"  issues: {status.issues_path}",
        f"  issues exists: {str(status.canonical.exists).lower()}",
        f"  repo: {status.repo_root}",
        f"  projection: {status.projection.path}",
        f"  projection exists: {str(status.projection.exists).lower()}",
        f"  jj state: {status.jj.state}",
    ]
    for label, value in (
        ("jj repo root", status.jj.repo_root),
        ("jj head change", status.jj.head_change_id),
        ("jj error", status.jj.error),
    ):
        if value is not None:
            lines.append(f"  {label}: {value}")
    return "\n".join(lines)


def _legacy_import(report: LegacyImport) -> dict[str, Any]:
    return {
        "keptRows": report.kept_rows,
        "droppedRows": [
            {"line": row.line, "id": row.issue_id, "reason": row.reason}
            for row in report.dropped_rows
        ],
        "droppedFields": report.dropped_fields,
        "convertedValues": report.converted_values,
    }


def init_document(outcome: InitOutcome) -> dict[str, Any]:
    """The reference's document; `legacyImport` (ours, D3-6) when a legacy store was read."""
    document: dict[str, Any] = {
        "action": "init",
        "repoRoot": outcome.repo_root,
        "premathDir": outcome.premath_dir,
        "issuesPath": outcome.issues_path,
        "migratedFromLegacy": outcome.migrated_from_legacy,
        "created": {
            "repoRoot": outcome.created_repo_root,
            "premathDir": outcome.created_premath_dir,
            "issuesFile": outcome.created_issues_file,
        },
    }
    if outcome.legacy_import is not None:
        document["legacyImport"] = _legacy_import(outcome.legacy_import)
    return document


def _yes_no(value: bool) -> str:
    return "yes" if value else "no"


def init_text(outcome: InitOutcome, argument: str) -> str:
    lines = [
        f"premath init {argument}",
        "",
        f"  repo root: {outcome.repo_root}",
        f"  premath dir: {outcome.premath_dir}",
        f"  issues path: {outcome.issues_path}",
    ]
    if outcome.migrated_from_legacy is not None:
        lines.append(f"  migrated from legacy: {outcome.migrated_from_legacy}")
    report = outcome.legacy_import
    if report is not None:
        lines.append(f"  legacy rows kept: {report.kept_rows}")
        lines.append(f"  legacy rows dropped: {len(report.dropped_rows)}")
        lines.extend(
            f"    - line {row.line} ({row.issue_id or 'no id'}): {row.reason}"
            for row in report.dropped_rows
        )
        for title, table in (
            ("legacy fields dropped", report.dropped_fields),
            ("legacy values converted", report.converted_values),
        ):
            if table:
                lines.append(
                    f"  {title}: " + ", ".join(f"{k} ({n})" for k, n in sorted(table.items()))
                )
    lines += [
        f"  created repo root: {_yes_no(outcome.created_repo_root)}",
        f"  created .premath dir: {_yes_no(outcome.created_premath_dir)}",
        f"  created issues file: {_yes_no(outcome.created_issues_file)}",
    ]
    return "\n".join(lines)
