"""The lease family (specs/issue-memory.md "Leases", agent-surface.md §2.6-§2.7): issue claim,
claim-next, lease renew and release, each an MCP tool and a transport action, and the holder's
`issue_lease_finish` (MCP, D23-2). Remote workers reach them through the client methods named
here (premath/mcp/remote.py).

Their service is the transport's lease actions (transport/lease_actions.py), which the MCP
tools run through `transport/dispatch.py` with the write witness attached under the lock;
`issue_lease_finish` runs issues/held.py. The parameters a transport payload takes are
declared with its struct (transport/payloads.py, below this floor, which reads them with the
one checker); an operation adds the MCP tool's own (`instructionId`, `mergeQueue`). Where the
faces differ the difference is data: the transport reads its payload with the reference's
struct names and no snake_case aliases (its `Reading`); its release is lenient (anyone may
release, a given assignee or lease id must match; D3-3, D12-2) while the CLI's `issue
lease-release` is the holder's; the lease-holder refusal's words are each face's
(issues/holder.py `WORDS`).
"""

from __future__ import annotations

from premath.models.params import param
from premath.ops.issue_writes import INSTRUCTION, MCP_ONLY
from premath.ops.operation import Faces, Operation
from premath.transport.payloads import (
    CLAIM_FIELDS,
    CLAIM_NEXT_FIELDS,
    ISSUES_PATH,
    RELEASE_FIELDS,
    RENEW_FIELDS,
)

_REMOTE = "premath.mcp.remote:McpAuthority."
_INPUT_FAILURES = ("lease_invalid_payload", "lease_invalid_assignee")
_TIME_FAILURES = ("lease_invalid_ttl", "lease_invalid_expires_at", "lease_binding_ambiguous")
_STORE_FAILURES = ("lease_mutation_lock_busy", "lease_mutation_lock_io", "lease_mutation_store_io")
_HOLDER_FAILURES = ("lease_not_found", "lease_missing", "lease_owner_mismatch", "lease_id_mismatch")

ISSUE_CLAIM = Operation(
    action="issue.claim",
    summary="Atomically claim an issue for work (sets assignee + in_progress)",
    params=(*CLAIM_FIELDS, INSTRUCTION, ISSUES_PATH),
    faces=Faces(mcp="issue_claim", transport="issue.claim"),
    mutates=True,
    gate="issue.claim",
    issue_param="id",
    failure_classes=(
        *_INPUT_FAILURES,
        *_TIME_FAILURES,
        "lease_not_found",
        "lease_issue_closed",
        "lease_contention_active",
        *_STORE_FAILURES,
    ),
    read_only=False,
)
ISSUE_CLAIM_NEXT = Operation(
    action="issue.claim_next",
    summary="Claim the best ready issue for an assignee with a lease (priority, then id order); "
    "escalation issues are left to people unless includeEscalations",
    params=(*CLAIM_NEXT_FIELDS, INSTRUCTION, ISSUES_PATH),
    faces=Faces(
        mcp="issue_claim_next",
        transport="issue.claim_next",
        remote=f"{_REMOTE}claim_next",
    ),
    mutates=True,
    gate="issue.claim_next",
    failure_classes=(*_INPUT_FAILURES, "lease_invalid_ttl", *_STORE_FAILURES),
    read_only=False,
)
ISSUE_LEASE_RENEW = Operation(
    action="issue.lease_renew",
    summary="Renew an active issue lease by id/assignee/lease_id",
    params=(
        *RENEW_FIELDS,
        INSTRUCTION,
        ISSUES_PATH,
        param("mergeQueue", "strings", faces=MCP_ONLY),
    ),
    faces=Faces(mcp="issue_lease_renew", transport="issue.lease_renew", remote=f"{_REMOTE}renew"),
    mutates=True,
    gate="issue.lease_renew",
    issue_param="id",
    failure_classes=(
        *_INPUT_FAILURES,
        *_TIME_FAILURES,
        *_HOLDER_FAILURES,
        "lease_issue_closed",
        "lease_stale",
        *_STORE_FAILURES,
    ),
    read_only=False,
)
ISSUE_LEASE_RELEASE = Operation(
    action="issue.lease_release",
    summary="Release an issue lease by id (optionally validating assignee/lease_id)",
    params=(*RELEASE_FIELDS, INSTRUCTION, ISSUES_PATH),
    faces=Faces(
        mcp="issue_lease_release", transport="issue.lease_release", remote=f"{_REMOTE}release"
    ),
    mutates=True,
    gate="issue.lease_release",
    issue_param="id",
    failure_classes=("lease_invalid_payload", *_HOLDER_FAILURES, *_STORE_FAILURES),
    read_only=False,
)
ISSUE_LEASE_FINISH = Operation(
    action="issue.lease_finish",
    summary="Close, block or give back (status closed|blocked|open) an issue the caller holds "
    "under its lease, with a note, witness refs and, when blocking, a discovered follow-up issue",
    params=(
        param("id", required=True),
        param("assignee", required=True),
        param("leaseId", required=True),
        param("status", "finish", required=True),
        param("notes"),
        param("witnessRefs", "strings"),
        param("discoverTitle"),
        param("discoverDescription"),
        INSTRUCTION,
        ISSUES_PATH,
    ),
    faces=Faces(mcp="issue_lease_finish", remote=f"{_REMOTE}finish"),
    mutates=True,
    gate="issue.lease_finish",
    issue_param="id",
    failure_classes=(*_HOLDER_FAILURES, "lease_issue_closed", "lease_stale"),
    read_only=False,
)
LEASE_OPERATIONS = (
    ISSUE_CLAIM,
    ISSUE_CLAIM_NEXT,
    ISSUE_LEASE_RENEW,
    ISSUE_LEASE_RELEASE,
    ISSUE_LEASE_FINISH,
)
