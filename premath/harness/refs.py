"""The loop's refs: lineage (`ctx://`, `cover://`, `refinement://`), lease handoff, policy audit,
delivered commits (`git://`).

Each is `sha256(compact, key-sorted JSON)` of a fixed object (specs/harness-loop.md
"Step"), so a ref names exactly the facts it was computed from.
"""

from __future__ import annotations

import hashlib

from premath.store.canonical import digest_input

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

WORKER_POOL = "harness.multithread.v1"


def stable_hash(value: Any) -> str:
    return hashlib.sha256(digest_input(value)).hexdigest()


def ctx_ref(issue_id: str, repo_root: str, issues_path: str) -> str:
    payload = {"kind": "ctx", "issueId": issue_id, "repoRoot": repo_root, "issuesPath": issues_path}
    return f"ctx://issue/{issue_id}/{stable_hash(payload)}"


def cover_ref(issue_id: str, ctx: str) -> str:
    payload = {"kind": "cover", "ctxRef": ctx, "workerPool": WORKER_POOL}
    return f"cover://worker-loop/{issue_id}/{stable_hash(payload)}"


def refinement_ref(
    issue_id: str,
    worker_id: str,
    cover: str,
    *,
    worktree: str,
    mutation_mode: str,
    active_epoch: str,
    support_until: str | None,
) -> str:
    payload = {
        "kind": "refinement",
        "coverRef": cover,
        "workerId": worker_id,
        "worktree": worktree,
        "mutationMode": mutation_mode,
        "activeEpoch": active_epoch,
        "supportUntil": support_until,
    }
    return f"refinement://worker-loop/{issue_id}/{worker_id}/{stable_hash(payload)}"


def lineage_refs(
    issue_id: str,
    worker_id: str,
    *,
    repo_root: str,
    issues_path: str,
    worktree: str,
    mutation_mode: str,
    active_epoch: str,
    support_until: str | None,
) -> list[str]:
    """The three lineage refs of one claim, sorted (cover, ctx, refinement)."""
    ctx = ctx_ref(issue_id, repo_root, issues_path)
    cover = cover_ref(issue_id, ctx)
    refinement = refinement_ref(
        issue_id,
        worker_id,
        cover,
        worktree=worktree,
        mutation_mode=mutation_mode,
        active_epoch=active_epoch,
        support_until=support_until,
    )
    return sorted((ctx, cover, refinement))


def lease_ref(
    *,
    issue_id: str,
    worker_id: str,
    lease_id: str | None,
    lease_owner: str | None,
    lease_state: str,
    lease_action: str,
    status: str,
    assignee: str,
) -> str:
    """`lease://handoff/<issue>/<state>/<digest>` over the eight handoff facts."""
    payload = {
        "issueId": issue_id,
        "workerId": worker_id,
        "leaseId": lease_id or "",
        "leaseOwner": lease_owner or "",
        "leaseState": lease_state,
        "leaseAction": lease_action,
        "status": status,
        "assignee": assignee,
    }
    return f"lease://handoff/{issue_id}/{lease_state}/{stable_hash(payload)}"


def policy_ref(
    *,
    mode: str,
    reason: str,
    active_epoch: str,
    support_until: str | None,
    worker_id: str,
    issue_id: str,
    step_index: int,
) -> str:
    """`policy://worker-lane/<mode>/<digest>`: the mutation authority one step ran under."""
    payload = {
        "mode": mode,
        "reason": reason,
        "activeEpoch": active_epoch,
        "supportUntil": support_until,
        "workerId": worker_id,
        "issueId": issue_id,
        "stepIndex": step_index,
    }
    return f"policy://worker-lane/{mode}/{stable_hash(payload)}"


def witness_ref(prefix: str, worker_id: str, issue_id: str, outcome: str) -> str:
    """The synthetic step witness `<prefix>/<worker>/<issue>/completed|failed`."""
    return f"{prefix.rstrip('/')}/{worker_id}/{issue_id}/{outcome}"


def step_id(worker_id: str, issue_id: str, step_index: int) -> str:
    return f"{worker_id}.{issue_id}.{step_index}"


def step_folder_name(step_id: str) -> str:
    """The step's folder under `harness_steps/`: its id made a safe single name (issue ids are
    free text), the same on a worker and at the authority (specs/remote-workers.md)."""
    import re

    return re.sub(r"[^A-Za-z0-9._-]", "_", step_id).lstrip(".") or "step"


def commit_ref(branch: str, commit: str) -> str:
    """`git://<branch>@<commit>`: the witness ref of a delivered commit."""
    return f"git://{branch}@{commit}"
