"""`issue backend-status`: the canonical store, the query projection beside it, and jj.

Reference agent-surface §5.4. Read-only and never failing: every problem is a field of the
report. The projection (`premath.surreal.issue_projection.v0`) is read leniently for its
metadata, then strictly; its issues hash to a payload ref that must match its
`sourceSnapshotRef`, and its source path and ref are compared with the authority.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime

import orjson

from premath.errors import PremathError
from premath.issues.snapshot import snapshot_ref_of
from premath.models.issue_row import RowInvalid, check_row
from premath.models.serde import describe
from premath.models.serde_text import object_ends, position, syntax_fault
from premath.runner.process import allowlisted_env, run_bounded
from premath.store.documents import os_error_text
from premath.store.issues_file import load_issues
from premath.timefmt import epoch_nanos, format_autosi_z

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.models.issue_row import IssueRow

PROJECTION_KIND = "premath.surreal.issue_projection.v0"
PROJECTION_SCHEMA = 1
DEFAULT_PROJECTION_PATH = ".premath/surreal_issue_cache.json"
_JJ_TIMEOUT_S = 10.0
_U64_MAX = 2**64 - 1
_U128_MAX = 2**128 - 1


@dataclass(frozen=True)
class CanonicalMemory:
    path: str
    exists: bool
    snapshot_ref: str | None
    error: str | None


@dataclass(frozen=True)
class Projection:
    path: str
    exists: bool
    state: str
    schema: int | None = None
    kind: str | None = None
    source_issues_path: str | None = None
    source_path_matches_authority: bool | None = None
    source_snapshot_ref: str | None = None
    snapshot_ref_matches_projection: bool | None = None
    snapshot_ref_matches_authority: bool | None = None
    error: str | None = None


@dataclass(frozen=True)
class JjState:
    state: str
    available: bool
    repo_root: str | None = None
    head_change_id: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class BackendStatus:
    issues_path: str
    repo_root: str
    canonical: CanonicalMemory
    projection: Projection
    jj: JjState


def _canonical(path: str, now: datetime) -> CanonicalMemory:
    if not os.path.exists(path):
        return CanonicalMemory(path, False, None, None)
    try:
        issues = load_issues(path, now, tolerate_torn_tail=False)
    except PremathError as exc:
        # The bare store error, as the reference reports it (no `failed to load <p>: `).
        return CanonicalMemory(
            path, True, None, exc.message.removeprefix(f"failed to load {path}: ")
        )
    return CanonicalMemory(path, True, snapshot_ref_of(issues), None)


# --- the projection ----------------------------------------------------------------------------


class _Invalid(Exception):
    pass


def _lenient_metadata(document: Any) -> dict[str, Any]:
    """The four optional metadata fields, when each has its type (serde's lenient struct)."""
    if type(document) is not dict:
        return {}
    schema = document.get("schema")
    strings = [document.get(k) for k in ("kind", "sourceIssuesPath", "sourceSnapshotRef")]
    if schema is not None and (type(schema) is not int or not 0 <= schema <= _U64_MAX):
        return {}
    if any(value is not None and type(value) is not str for value in strings):
        return {}
    names = ("schema", "kind", "sourceIssuesPath", "sourceSnapshotRef")
    return dict(zip(names, [schema, *strings], strict=True))


_STRICT_FIELDS = (
    "schema",
    "kind",
    "sourceIssuesPath",
    "sourceSnapshotRef",
    "generatedAtUnixMs",
    "issueCount",
    "issues",
)


def _unsigned(value: Any, maximum: int, name: str) -> str | None:
    if type(value) is not int:
        return f"invalid type: {describe(value)}, expected {name}"
    if not 0 <= value <= maximum:
        return f"invalid value: {describe(value)}, expected {name}"
    return None


def _strict_payload(
    text: bytes, document: Any, now_text: str
) -> tuple[dict[str, Any], list[IssueRow]]:
    """serde's strict parse of `IssueQueryProjectionPayload`, its messages and positions."""
    ends = object_ends(text)
    if type(document) is not dict or ends is None:
        raise _Invalid(
            f"invalid type: {describe(document)}, expected struct IssueQueryProjectionPayload"
            + position(text, len(text.rstrip()) - 1)
        )
    rows: list[IssueRow] = []
    for key, value in document.items():
        at = position(text, ends.values.get(key, ends.close))
        problem: str | None = None
        if key == "schema":
            problem = _unsigned(value, _U64_MAX, "u64")
        elif key in ("kind", "sourceIssuesPath") or (
            key == "sourceSnapshotRef" and value is not None
        ):
            problem = (
                None
                if type(value) is str
                else f"invalid type: {describe(value)}, expected a string"
            )
        elif key == "generatedAtUnixMs":
            problem = _unsigned(value, _U128_MAX, "u128")
        elif key == "issueCount":
            problem = _unsigned(value, _U64_MAX, "usize")
        elif key == "issues":
            if type(value) is not list:
                problem = f"invalid type: {describe(value)}, expected a sequence"
            else:
                try:
                    rows = [check_row(item, now_text) for item in value]
                except RowInvalid as exc:
                    problem = str(exc)
        if problem is not None:
            raise _Invalid(problem + at)
    for field in _STRICT_FIELDS:
        if field != "sourceSnapshotRef" and field not in document:
            raise _Invalid(f"missing field `{field}`" + position(text, ends.close))
    return document, rows


def _projection(
    path: str, issues_path: str, authority_ref: str | None, now: datetime
) -> Projection:
    if not os.path.exists(path):
        return Projection(path, False, "missing")
    try:
        with open(path, "rb") as handle:
            text = handle.read()
    except OSError as exc:
        return Projection(
            path, True, "invalid", error=f"failed to read {path}: {os_error_text(exc)}"
        )
    try:
        document: Any = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        fault = syntax_fault(text)
        return Projection(path, True, "invalid", error=f"failed to parse {path}: {fault or exc}")
    meta = _lenient_metadata(document)
    found = {
        "schema": meta.get("schema"),
        "kind": meta.get("kind"),
        "source_issues_path": meta.get("sourceIssuesPath"),
        "source_snapshot_ref": meta.get("sourceSnapshotRef"),
    }
    try:
        payload, rows = _strict_payload(text, document, format_autosi_z(epoch_nanos(now)))
    except _Invalid as exc:
        return Projection(path, True, "invalid", **found, error=f"failed to parse {path}: {exc}")
    found = {
        "schema": payload["schema"],
        "kind": payload["kind"],
        "source_issues_path": payload["sourceIssuesPath"],
        "source_snapshot_ref": payload.get("sourceSnapshotRef"),
    }
    if payload["schema"] != PROJECTION_SCHEMA or payload["kind"] != PROJECTION_KIND:
        actual_kind = orjson.dumps(payload["kind"]).decode()
        return Projection(
            path, True, "invalid", **found,
            error=f"projection metadata mismatch (expected schema={PROJECTION_SCHEMA} "
            f"kind={PROJECTION_KIND}, actual schema=Some({payload['schema']}) "
            f"kind=Some({actual_kind}))",
        )  # fmt: skip
    payload_ref = snapshot_ref_of({row["id"]: row for row in rows})
    source_ref = found["source_snapshot_ref"]
    matches_payload = None if source_ref is None else source_ref == payload_ref
    if matches_payload is False:
        return Projection(
            path, True, "invalid", **found, snapshot_ref_matches_projection=False,
            error=f"projection payload snapshot mismatch (sourceSnapshotRef={source_ref}, "
            f"payloadSnapshotRef={payload_ref})",
        )  # fmt: skip
    path_matches = paths_equivalent(payload["sourceIssuesPath"], issues_path)
    ref_matches = (
        None if source_ref is None or authority_ref is None else source_ref == authority_ref
    )
    if path_matches is False or ref_matches is False:
        state = "stale"
    elif path_matches and ref_matches:
        state = "fresh"
    else:
        state = "unknown"
    return Projection(
        path, True, state, **found,
        source_path_matches_authority=path_matches,
        snapshot_ref_matches_projection=matches_payload,
        snapshot_ref_matches_authority=ref_matches,
    )  # fmt: skip


def _components(path: str) -> list[str]:
    """Rust's `Path::components`: interior `.` and repeated `/` dropped, a leading `.` kept."""
    parts = path.split("/")
    kept = [part for index, part in enumerate(parts) if part and (part != "." or index == 0)]
    return (["/"] if path.startswith("/") else []) + kept


def _normalized(path: str) -> str:
    joined = path if os.path.isabs(path) else os.path.join(os.getcwd(), path)
    try:
        return os.path.realpath(joined, strict=True)
    except OSError:
        return joined


def paths_equivalent(left: str, right: str) -> bool:
    """Component-wise equal, or equal once made absolute and (where they exist) canonical."""
    return _components(left) == _components(right) or _normalized(left) == _normalized(right)


# --- jj ----------------------------------------------------------------------------------------


class _JjFailed(Exception):
    pass


def _run_jj(args: list[str], cwd: str) -> str:
    outcome = run_bounded(
        ["jj", *args],
        cwd=cwd,
        env=allowlisted_env(),
        timeout_s=_JJ_TIMEOUT_S,
        stdout_path=None,
        stderr_path=None,
        output_cap=1 << 16,
    )
    if outcome.status == "spawn_failed":
        # Also what the reference says when `cwd` does not exist (quirk 12).
        raise _JjFailed("jj executable is not available in PATH")
    if outcome.exit_code != 0:
        message = outcome.stderr_tail.strip() or "unknown error"
        raise _JjFailed(f"jj command failed: jj {' '.join(args)} ({message})")
    return outcome.stdout_tail


def _first_line(text: str) -> str | None:
    return next((line.strip() for line in text.splitlines() if line.strip()), None)


def jj_state(repo: str) -> JjState:
    """`jj --version` succeeds: available; then `jj root` in `repo` and the change id at `@`."""
    try:
        _run_jj(["--version"], os.getcwd())
    except _JjFailed:
        return JjState("unavailable", False)
    try:
        root = _first_line(_run_jj(["root"], repo))
        if root is None:
            raise _JjFailed("unable to parse jj output: jj root returned empty output")
    except _JjFailed as exc:
        return JjState("error", True, error=str(exc))
    try:
        log = ["log", "-r", "@", "--no-graph", "-T", 'change_id ++ "\\n"']
        change = _first_line(_run_jj(log, root))
        if change is None:
            raise _JjFailed("unable to parse jj output: failed to parse change id from jj log")
    except _JjFailed as exc:
        return JjState("error", True, repo_root=root, error=str(exc))
    return JjState("ready", True, repo_root=root, head_change_id=change)


def backend_status(
    issues_path: str, repo: str, projection_path: str, *, now: datetime
) -> BackendStatus:
    canonical = _canonical(issues_path, now)
    projection = _projection(projection_path, issues_path, canonical.snapshot_ref, now)
    return BackendStatus(issues_path, repo, canonical, projection, jj_state(repo))
