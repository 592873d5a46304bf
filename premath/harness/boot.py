"""Boot: resolve the memory roots, check dependency integrity, load the handoff, pick a target.

A boot report never mutates anything (the startup verification command may, in its worktree).
Findings are data: the report is `rejected` with failure classes, and the CLI exits 1, as
`harness-feature check` does. specs/harness-loop.md "Boot".
"""

from __future__ import annotations

import os
from datetime import datetime

from premath.errors import PremathError
from premath.models.boot_report import BOOT_KIND, BOOT_SCHEMA, BootFailureClass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.harness.authority import BootView, IssueAuthority


def _finding(failure_class: BootFailureClass, message: str) -> dict[str, str]:
    return {"class": failure_class, "message": message}


def _memory_roots(
    paths: Any,
    view: BootView,
    findings: list[dict[str, str]],
    extra_roots: list[dict[str, Any]],
) -> dict[str, Any]:
    """Where each root lives and its state (`roots`: present, missing or invalid with why)."""
    from premath.harness.memory_roots import file_root

    def why(*classes: str) -> str | None:
        return next((f["message"] for f in findings if f["class"] in classes), None)

    issues_path = view.issues_root["path"]
    roots = [
        view.issues_root,
        file_root("session", paths.session, paths.session, why("boot.session_invalid")),
        file_root("featureLedger", paths.ledger, paths.ledger, why("boot.ledger_invalid")),
        file_root("trajectory", paths.trajectory, paths.trajectory),
        *extra_roots,
    ]
    return {
        "repoRoot": paths.repo_root,
        "issuesPath": issues_path,
        "issuesExists": view.issues_root["state"] != "missing",
        "sessionPath": paths.session,
        "sessionExists": os.path.exists(paths.session),
        "featureLedgerPath": paths.ledger,
        "featureLedgerExists": os.path.exists(paths.ledger),
        "trajectoryPath": paths.trajectory,
        "trajectoryExists": os.path.exists(paths.trajectory),
        "roots": roots,
    }


def _next_target(
    issues: dict[str, Any],
    handoff: dict[str, Any] | None,
    ready_ids: list[str],
    witness_bound: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """Resume the session's issue, else the ledger's next feature, else the first ready issue
    an accepted, mutation-scoped instruction witness binds, else the first ready issue."""
    if handoff is not None:
        resume = handoff.get("resumeIssueId")
        status = issues.get(resume) if resume else None
        if status == "in_progress":
            return {
                "issueId": resume,
                "source": "resume",
                "featureId": handoff.get("nextFeatureId"),
            }
        feature = handoff.get("nextFeatureId")
        status = issues.get(feature) if feature else None
        if status is not None and status != "closed":
            return {"issueId": feature, "source": "feature_ledger", "featureId": feature}
    bound = next((issue_id for issue_id in ready_ids if issue_id in witness_bound), None)
    if bound is not None:
        return {"issueId": bound, "source": "instruction_witness", "featureId": None}
    if ready_ids:
        return {"issueId": ready_ids[0], "source": "ready", "featureId": None}
    return {"issueId": None, "source": None, "featureId": None}


def boot_report(
    paths: Any,
    *,
    now: datetime,
    startup_cmd: str | None = None,
    worktree: str = ".",
    timeout_s: float = 1800.0,
    pass_env: tuple[str, ...] = (),
    memory: IssueAuthority | None = None,
) -> dict[str, Any]:
    """The boot document for `paths` (a LoopPaths); see the module doc. `memory` is issue
    memory's authority (default: the issues file of `paths`)."""
    from premath.harness.authority import LocalAuthority

    memory = memory or LocalAuthority(paths.issues, 10.0)
    view = memory.boot_view(now)
    findings: list[dict[str, str]] = []
    if view.finding is not None:
        findings.append(_finding(*view.finding))
    cycle_path = (view.integrity or {}).get("cyclePath")
    if cycle_path:
        path_text = " -> ".join(cycle_path)
        findings.append(_finding("boot.dependency_cycle", f"dependency cycle: {path_text}"))
    handoff = _load_handoff(paths, findings)
    issues, ready_ids = view.statuses, view.ready_ids
    startup = (
        _run_startup(startup_cmd, worktree, timeout_s, pass_env, paths) if startup_cmd else None
    )
    if startup is not None and startup["status"] != "ok":
        findings.append(
            _finding("boot.startup_verification_failed", f"startup command {startup['status']}")
        )
    from premath.harness.memory_roots import observation_root, witness_root

    witnesses, accepted = witness_root(paths.repo_root)
    witness_bound = frozenset(
        issue_id
        for witness in accepted
        if witness.scoped and (issue_id := witness.bound_issue()) is not None
    )
    classes = sorted({finding["class"] for finding in findings})
    target = _next_target(issues, handoff, ready_ids, witness_bound)
    if target["issueId"] in issues:
        target["issue"] = memory.issue(target["issueId"], now)
    return {
        "action": "harness.boot",
        "schema": BOOT_SCHEMA,
        "bootKind": BOOT_KIND,
        "result": "rejected" if findings else "accepted",
        "failureClasses": classes,
        "findings": findings,
        "memoryRoots": _memory_roots(
            paths, view, findings, [witnesses, observation_root(paths.repo_root)]
        ),
        "issuesSnapshotRef": view.snapshot_ref,
        "integrity": view.integrity,
        "handoff": handoff,
        "readyCount": len(ready_ids),
        "readyIssueIds": ready_ids[:20],
        "nextTarget": target,
        "startup": startup,
    }


def _load_handoff(paths: Any, findings: list[dict[str, str]]) -> dict[str, Any] | None:
    from premath.harness.session import bootstrap_session

    if not os.path.exists(paths.session):
        return None
    try:
        return bootstrap_session(paths.session, paths.ledger)
    except PremathError as exc:
        failure_class: BootFailureClass = (
            "boot.ledger_invalid" if "feature ledger" in exc.message else "boot.session_invalid"
        )
        findings.append(_finding(failure_class, exc.message))
        return None


def _run_startup(
    command: str, worktree: str, timeout_s: float, pass_env: tuple[str, ...], paths: Any
) -> dict[str, Any]:
    from premath.harness.commands import command_env, run_command

    run = run_command(
        "startup",
        command,
        cwd=os.path.abspath(worktree),
        env=command_env({"PREMATH_ISSUES_PATH": paths.issues}, pass_env),
        timeout_s=timeout_s,
        output_cap=1024 * 1024,
        log_dir=os.path.join(paths.steps_dir, "boot"),
    )
    return run.to_document()
