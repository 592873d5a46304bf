"""`premath init [ROOT]`: the `.premath/` layout, and the import of a legacy beads store.

Reference agent-surface §5.5: `ROOT/.premath/issues.jsonl` is created when missing, from
`ROOT/.beads/issues.jsonl` when that exists, else empty; an existing store is never touched. The
reference copies the legacy file byte for byte, even when no premath command can then read it.
We read it instead (divergence D3-6): rows beads (`bd`) wrote become canonical premath rows
(its timestamp forms normalised, its extra fields and unknown edge types dropped, its other
issue types filed as `task`), rows that cannot be kept are dropped, and the report says what was
kept and what was dropped. A file that is not JSON lines is refused and nothing is written:
every check runs before the first folder is created.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime

import orjson

from premath.errors import ArtifactInvalid, IoFailure
from premath.models.issue_row import (
    BLOCKING_TYPES,
    DEPENDENCY_TYPES,
    FIELD_ORDER,
    RowInvalid,
    check_row,
)
from premath.models.serde_text import syntax_fault
from premath.store.atomic import write_atomic
from premath.store.documents import os_error_text
from premath.store.issues_file import IssueMap, encode_store, lock_path
from premath.store.locks import hold_marker
from premath.text import rust_trim
from premath.timefmt import epoch_nanos, format_autosi_z

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

LEGACY_STORE = os.path.join(".beads", "issues.jsonl")
_KNOWN_FIELDS = frozenset(FIELD_ORDER)
_EDGE_FIELDS = ("issue_id", "depends_on_id", "type", "created_by")
_EDGE_TYPES = frozenset(DEPENDENCY_TYPES) | BLOCKING_TYPES
_DELETED_STATUSES = frozenset(("tombstone", "deleted"))


@dataclass(frozen=True)
class DroppedRow:
    line: int
    issue_id: str | None
    reason: str


@dataclass
class LegacyImport:
    """What became of the legacy store's rows."""

    kept_rows: int = 0
    dropped_rows: list[DroppedRow] = field(default_factory=list)
    dropped_fields: dict[str, int] = field(default_factory=dict)
    """Field name (`dependencies[].x` for edge fields) -> rows that lost it."""
    converted_values: dict[str, int] = field(default_factory=dict)
    """`field: from -> to` -> rows changed that way."""

    def count(self, table: dict[str, int], key: str) -> None:
        table[key] = table.get(key, 0) + 1


@dataclass(frozen=True)
class InitOutcome:
    repo_root: str
    premath_dir: str
    issues_path: str
    created_repo_root: bool
    created_premath_dir: bool
    created_issues_file: bool
    migrated_from_legacy: str | None
    legacy_import: LegacyImport | None


def _beads_edge(edge: Any, issue_id: str, report: LegacyImport) -> dict[str, Any] | None:
    if type(edge) is not dict:
        report.count(report.dropped_fields, "dependencies[] (not an object)")
        return None
    kind = edge.get("type", edge.get("dep_type"))
    if kind not in _EDGE_TYPES:
        report.count(report.dropped_fields, f"dependencies[type={kind}]")
        return None
    for name in edge.keys() - set(_EDGE_FIELDS) - {"dep_type"}:
        report.count(report.dropped_fields, f"dependencies[].{name}")
    kept = {name: edge[name] for name in _EDGE_FIELDS if edge.get(name) is not None}
    kept["type"] = kind
    kept.setdefault("issue_id", issue_id)
    return kept


def _beads_row(value: dict[str, Any], report: LegacyImport) -> dict[str, Any]:
    """The row with what premath cannot keep taken out (and counted); nulls read as absent."""
    row = {key: item for key, item in value.items() if item is not None}
    for name in row.keys() - _KNOWN_FIELDS:
        report.count(report.dropped_fields, name)
        del row[name]
    issue_type = row.get("issue_type")
    if type(issue_type) is str and rust_trim(issue_type).lower() not in ("epic", "task"):
        report.count(report.converted_values, f"issue_type: {issue_type} -> task")
        row["issue_type"] = "task"
    edges = row.get("dependencies")
    if type(edges) is list:
        issue_id = row["id"] if type(row.get("id")) is str else ""
        row["dependencies"] = [
            kept for edge in edges if (kept := _beads_edge(edge, issue_id, report)) is not None
        ]
    return row


def read_legacy_store(path: str, now: datetime) -> tuple[IssueMap, LegacyImport]:
    """Every row of a beads store premath can keep, canonical; refuses a file that is not JSON
    lines (naming the line) so that nothing is written from it."""
    now_text = format_autosi_z(epoch_nanos(now))
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise IoFailure(f"failed to read legacy store {path}: {os_error_text(exc)}") from None
    report = LegacyImport()
    issues: IssueMap = {}
    for number, raw in enumerate(data.split(b"\n"), start=1):
        line = raw.strip()
        if not line or line.startswith(b"#"):
            continue
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            why = syntax_fault(line) or exc
            raise ArtifactInvalid(
                f"legacy store {path} is not JSON lines: line {number}: {why}; nothing was "
                "written: fix or move the file, then run init again"
            ) from None
        if type(value) is not dict:
            raise ArtifactInvalid(
                f"legacy store {path} is not JSON lines of issues: line {number} is not an "
                "object; nothing was written: fix or move the file, then run init again"
            )
        issue_id = value.get("id") if type(value.get("id")) is str else None
        if value.get("status") in _DELETED_STATUSES:
            report.dropped_rows.append(DroppedRow(number, issue_id, "deleted in beads"))
            continue
        try:
            row = check_row(_beads_row(value, report), now_text)
        except RowInvalid as exc:
            report.dropped_rows.append(DroppedRow(number, issue_id, str(exc)))
            continue
        issues[row["id"]] = row
    report.kept_rows = len(issues)
    return issues, report


def _join(root: str, name: str) -> str:
    """Rust's `Path::join` for a relative name: `.` stays (`./.premath`)."""
    return os.path.join(root, name) if root else name


def init_layout(root: str, *, now: datetime, timeout_s: float) -> InitOutcome:
    """Create the layout under `root`; idempotent. Every refusal comes before any write."""
    premath_dir = _join(root, ".premath")
    issues_path = _join(premath_dir, "issues.jsonl")
    legacy_path = _join(root, LEGACY_STORE)
    if os.path.exists(root) and not os.path.isdir(root):
        raise IoFailure(f"init path is not a directory: {root}")
    if os.path.exists(premath_dir) and not os.path.isdir(premath_dir):
        raise IoFailure(f"premath path is not a directory: {premath_dir}")
    if os.path.exists(issues_path) and not os.path.isfile(issues_path):
        raise IoFailure(f"issues path exists but is not a file: {issues_path}")
    legacy: tuple[IssueMap, LegacyImport] | None = None
    if not os.path.exists(issues_path) and os.path.exists(legacy_path):
        legacy = read_legacy_store(legacy_path, now)
    created_root = not os.path.exists(root)
    created_dir = not os.path.exists(premath_dir)
    for folder, what in ((root, "init path"), (premath_dir, "premath directory")):
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as exc:
            raise IoFailure(f"failed to create {what} {folder}: {os_error_text(exc)}") from None
    created_file = False
    with hold_marker(
        lock_path(issues_path),
        timeout_s=timeout_s,
        busy_message=f"issue-memory lock busy: {lock_path(issues_path)}",
    ):
        if not os.path.exists(issues_path):
            data = b"" if legacy is None else encode_store(legacy[0])
            try:
                write_atomic(issues_path, data)
            except OSError as exc:
                raise IoFailure(
                    f"failed to initialize {issues_path}: {os_error_text(exc)}"
                ) from None
            created_file = True
    migrated = legacy is not None and created_file
    return InitOutcome(
        root, premath_dir, issues_path, created_root, created_dir, created_file,
        legacy_path if migrated else None, legacy[1] if migrated and legacy else None,
    )  # fmt: skip
