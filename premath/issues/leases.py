"""Leases: who may work on an issue until when (specs/issue-memory.md "Leases").

Pure functions on an in-memory store; `premath.issues.memory` runs them under the store lock.
An issue holds at most one lease, only while `in_progress`; an active lease belongs to one
owner, and nobody else may claim, renew or release it until it expires. Times are epoch
nanoseconds; rows store them in the AutoSi `Z` form.

Ours differs from the reference in two places (docs/divergences.md): claim-next also reclaims an
`in_progress` issue whose lease is stale (D3-1), and orders candidates by priority, then id in
natural order (D3-2). The lease-renew and lease-release commands only let the holder act on an
active lease (D3-3).
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Callable

from premath.errors import InputInvalid, LeaseRefused, NotFound, PremathError
from premath.issues.graph import is_unblocked
from premath.issues.holder import holder_mismatch
from premath.issues.lifecycle import put_field, set_status
from premath.lean import NamedTuple
from premath.models.vocabulary import is_escalation_title
from premath.store.issues_file import IssueMap, StoreView, ViewedIssues
from premath.text import id_token, rust_trim
from premath.timefmt import (
    NANOS_PER_SECOND,
    compiled,
    days_from_civil,
    format_autosi_z,
    parse_relaxed,
    parse_strict_rfc3339,
    stamp_is_stored,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal

    from premath.models.issue_row import IssueRow, LeaseRow
    from premath.models.vocabulary import LeaseState

    LeaseFailureClass = Literal[
        "lease_invalid_assignee",
        "lease_binding_ambiguous",
        "lease_invalid_expires_at",
        "lease_invalid_ttl",
        "lease_not_found",
        "lease_issue_closed",
        "lease_contention_active",
        "lease_missing",
        "lease_stale",
        "lease_owner_mismatch",
        "lease_id_mismatch",
    ]


DEFAULT_TTL_SECONDS = 3600
MIN_TTL_SECONDS = 30
MAX_TTL_SECONDS = 86400
TTL_RANGE_TEXT = f"lease_ttl_seconds must be in range [{MIN_TTL_SECONDS}, {MAX_TTL_SECONDS}]"

_INPUT_CLASSES = {
    "lease_invalid_assignee",
    "lease_binding_ambiguous",
    "lease_invalid_expires_at",
    "lease_invalid_ttl",
}
_NATURAL_PARTS = r"([0-9]+)"


class LeaseFailure:
    """Mixed into lease errors: the reference's failure class, for callers that branch on it."""

    failure_class: LeaseFailureClass


class LeaseInputRejected(LeaseFailure, InputInvalid):
    """A lease request with a blank assignee, a bad TTL or expiry."""


class LeaseIssueMissing(LeaseFailure, NotFound):
    """A lease request for an issue the store does not hold."""


class LeaseDenied(LeaseFailure, LeaseRefused):
    """A lease request the holder rules refuse (contention, staleness, mismatch, closed)."""


def lease_error(failure_class: LeaseFailureClass, diagnostic: str) -> PremathError:
    """The reference's rejection, `<diagnostic> (<failure_class>)`, as our error class."""
    message = f"{diagnostic} ({failure_class})"
    error: LeaseInputRejected | LeaseIssueMissing | LeaseDenied
    if failure_class in _INPUT_CLASSES:
        error = LeaseInputRejected(message)
    elif failure_class == "lease_not_found":
        error = LeaseIssueMissing(message)
    else:
        error = LeaseDenied(message)
    error.failure_class = failure_class
    return error


@functools.lru_cache(maxsize=1 << 16)
def stored_nanos(text: str) -> int:
    """Epoch nanoseconds of a stored (AutoSi `Z`) row timestamp (memoised: a long-running
    server evaluates the same lease times on every call); any other form chrono's relaxed
    parser reads (a leap second too) takes that parser."""
    if not stamp_is_stored(text) or text[17:19] == "60":
        value = parse_relaxed(text)
        if value is None:
            raise ValueError(f"not a stored timestamp: {text!r}")
        return value
    year, month, day = int(text[:4]), int(text[5:7]), int(text[8:10])
    hour, minute, second = int(text[11:13]), int(text[14:16]), int(text[17:19])
    seconds = days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second
    return seconds * NANOS_PER_SECOND + int(text[20:-1].ljust(9, "0"))


def lease_id_for(issue_id: str, assignee: str) -> str:
    """`lease1_<tok(issue)>_<tok(assignee)>`, the default lease id."""
    return f"lease1_{id_token(issue_id, 'anon')}_{id_token(assignee, 'anon')}"


def lease_state(row: IssueRow, now_ns: int) -> LeaseState:
    """`unleased` without a lease, `active` while `expires_at > now`, else `stale`."""
    lease = row.get("lease")
    if lease is None:
        return "unleased"
    return "active" if stored_nanos(lease["expires_at"]) > now_ns else "stale"


def holder_warning(
    issue_id: str, lease: LeaseRow | None, caller: str | None, now_ns: int
) -> str | None:
    """`issue update` of an issue someone else holds under an active lease: said, not refused
    (the reference accepts it; issue 35). None when unleased, stale, or the caller holds it."""
    if lease is None or lease["owner"] == caller or stored_nanos(lease["expires_at"]) <= now_ns:
        return None
    owner = lease["owner"]
    return (
        f"{issue_id} is held by {owner} (lease {lease['lease_id']} until {lease['expires_at']}): "
        f"updated anyway; {owner} may still be working on it, so tell it or wait for the lease "
        "to end"
    )


def loop_lease_state(row: IssueRow | None, now_ns: int) -> LeaseState:
    """The lease state a loop hands off on, in the reference's order (specs/harness-loop.md
    "Lease states"): a missing or closed issue first, then `lease_state`, an active lease that
    disagrees with the row's status or assignee being `contended`."""
    if row is None:
        return "missing_issue"
    if row["status"] == "closed":
        return "closed_with_lease" if "lease" in row else "released"
    state = lease_state(row, now_ns)
    if state == "active" and is_contended(row, now_ns):
        return "contended"
    return state


def is_contended(row: IssueRow, now_ns: int) -> bool:
    """An active lease on an issue that is not in_progress or is assigned to someone else."""
    if lease_state(row, now_ns) != "active":
        return False
    return row["status"] != "in_progress" or row.get("assignee", "") != row["lease"]["owner"]


def required_assignee(assignee: str) -> str:
    trimmed = rust_trim(assignee)
    if not trimmed:
        raise lease_error("lease_invalid_assignee", "assignee is required")
    return trimmed


def lease_expiry(now_ns: int, ttl_seconds: int | None, expires_at: str | None) -> int:
    """The new expiry: `now + ttl` (default 3600 s, 30..86400) or a future RFC3339 time."""
    if ttl_seconds is not None and expires_at is not None:
        raise lease_error(
            "lease_binding_ambiguous",
            "provide only one of leaseTtlSeconds or leaseExpiresAt",
        )
    if expires_at is not None:
        parts = parse_strict_rfc3339(expires_at)
        if parts is None:
            raise lease_error(
                "lease_invalid_expires_at",
                "lease_expires_at must be RFC3339",
            )
        expiry = parts[0] * NANOS_PER_SECOND + parts[1]
        if expiry <= now_ns:
            raise lease_error("lease_invalid_expires_at", "lease_expires_at must be in the future")
        return expiry
    ttl = DEFAULT_TTL_SECONDS if ttl_seconds is None else ttl_seconds
    if not MIN_TTL_SECONDS <= ttl <= MAX_TTL_SECONDS:
        raise lease_error("lease_invalid_ttl", TTL_RANGE_TEXT)
    return now_ns + ttl * NANOS_PER_SECOND


def _drop_stale_lease(row: IssueRow, caller: str, now_ns: int, now_text: str) -> None:
    """A stale lease is void: drop it, reopen an in_progress issue, clear a foreign assignee."""
    if lease_state(row, now_ns) != "stale":
        return
    del row["lease"]
    if row["status"] == "in_progress":
        set_status(row, "open", now_text)
    assignee = row.get("assignee", "")
    if assignee and assignee != caller:
        del row["assignee"]


def _grant(row: IssueRow, assignee: str, now_text: str, expiry_ns: int, lease_id: str) -> None:
    """Assign, move to in_progress and write the lease; the holder's own lease is renewed
    (same id, `acquired_at` kept, `renewed_at` now) whatever id was requested."""
    put_field(row, "assignee", assignee)
    set_status(row, "in_progress", now_text)
    held = row.get("lease")
    if held is not None and held["owner"] == assignee:
        lease: LeaseRow = {
            "lease_id": held["lease_id"],
            "owner": assignee,
            "acquired_at": held["acquired_at"],
            "expires_at": format_autosi_z(expiry_ns),
            "renewed_at": now_text,
        }
    else:
        lease = {
            "lease_id": lease_id,
            "owner": assignee,
            "acquired_at": now_text,
            "expires_at": format_autosi_z(expiry_ns),
        }
    put_field(row, "lease", lease)


def _requested_lease_id(issue_id: str, assignee: str, lease_id: str | None) -> str:
    trimmed = rust_trim(lease_id or "")
    return trimmed or lease_id_for(issue_id, assignee)


def _refuse_foreign_holder(row: IssueRow, assignee: str) -> None:
    lease = row.get("lease")
    if lease is not None and lease["owner"] != assignee:
        raise lease_error(
            "lease_contention_active",
            f"issue already leased: {row['id']} (owner={lease['owner']}, "
            f"lease_id={lease['lease_id']})",
        )
    current = row.get("assignee", "")
    if lease is None and current and current != assignee:
        raise lease_error(
            "lease_contention_active", f"issue already claimed: {row['id']} (assignee={current})"
        )


def claim_issue(
    issues: IssueMap,
    issue_id: str,
    assignee: str,
    *,
    now_ns: int,
    expiry_ns: int,
    lease_id: str | None = None,
) -> IssueRow:
    """`issue claim`: take (or renew one's own) lease on one issue; readiness is not checked."""
    row = issues.get(issue_id)
    if row is None:
        raise lease_error("lease_not_found", f"issue not found: {issue_id}")
    if row["status"] == "closed":
        raise lease_error("lease_issue_closed", f"issue is closed: {issue_id}")
    now_text = format_autosi_z(now_ns)
    _drop_stale_lease(row, assignee, now_ns, now_text)
    _refuse_foreign_holder(row, assignee)
    _grant(row, assignee, now_text, expiry_ns, _requested_lease_id(issue_id, assignee, lease_id))
    return row


def natural_key_once(issue_id: str) -> tuple[Any, ...]:
    """Digits compare as numbers: `bd-2` before `bd-10` (D3-2). The usual shape (digits at the
    end only, `bd-17`) skips the regex. Uncached: a one-shot sort of 100k ids (`issue list`)
    would spend a third of its time filling the cache of `natural_key`."""
    head = issue_id.rstrip(_ASCII_DIGITS)
    if head.translate(_NO_ASCII_DIGITS) == head:
        tail = issue_id[len(head) :]
        return (head, int(tail), "") if tail else (head,)
    parts = compiled(_NATURAL_PARTS).split(issue_id)
    return tuple(int(part) if index % 2 else part for index, part in enumerate(parts))


natural_key = functools.lru_cache(maxsize=1 << 17)(natural_key_once)
"""`natural_key_once`, kept per id: a long-lived server ranks the same candidates on every
claim."""


def claim_order(row: IssueRow) -> tuple[Any, ...]:
    """Where claim-next takes a row: priority (lower first), then the id in natural order, then
    byte order (D3-2). `issue ready`/`list` list in this order too (D25-1)."""
    return (row["priority"], natural_key(row["id"]), row["id"])


def claim_order_once(row: IssueRow) -> tuple[Any, ...]:
    """`claim_order` for a sort that sees each id once (a one-shot listing): no cache."""
    issue_id = row["id"]
    return (row["priority"], natural_key_once(issue_id), issue_id)


_ASCII_DIGITS = "0123456789"
_NO_ASCII_DIGITS = str.maketrans("", "", _ASCII_DIGITS)


def _stale_test(now_ns: int) -> Callable[[LeaseRow], bool]:
    """`lease is stale at now`, fast for stored times: two stored times with 4-digit years
    compare as text on their `YYYY-MM-DDTHH:MM:SS` prefix; only a tie needs the fractions."""
    now_prefix = format_autosi_z(now_ns)[:19]

    def stale(lease: LeaseRow) -> bool:
        expires = lease["expires_at"]
        prefix = expires[:19]
        if expires[4:5] == "-" and prefix != now_prefix:
            return prefix < now_prefix
        return stored_nanos(expires) <= now_ns

    return stale


def _open_to_claims(row: IssueRow, issues: IssueMap, stale: Callable[[LeaseRow], bool]) -> bool:
    """Whether claim-next may take the row for someone: unblocked (every blocking target
    closed) and either `open`, or `in_progress` with a stale lease (D3-1: a dead worker's issue)."""
    status = row["status"]
    if status == "in_progress":
        lease = row.get("lease")
        if lease is None or not stale(lease):
            return False
    elif status != "open":
        return False
    dependencies = row.get("dependencies")
    return dependencies is None or is_unblocked(dependencies, issues)


def _claimable_by(row: IssueRow, assignee: str, stale: Callable[[LeaseRow], bool]) -> bool:
    """Not for `assignee` when another owner holds an active lease, or when nobody does but
    another assignee is set."""
    lease = row.get("lease")
    if lease is not None:
        return lease["owner"] == assignee or stale(lease)
    current = row.get("assignee")
    return not current or current == assignee


_CLAIM_STATUSES = frozenset(("open", "in_progress"))


def _for_workers(row: IssueRow, include_escalations: bool) -> bool:
    """An escalation the loop filed is work for a person: skipped unless asked (D30a-1)."""
    return include_escalations or not is_escalation_title(row.get("title"))


def claim_candidates(
    issues: IssueMap, assignee: str, now_ns: int, *, include_escalations: bool = False
) -> list[IssueRow]:
    """Issues claim-next may take for `assignee`, unordered (`_open_to_claims`, `_claimable_by`,
    `_for_workers`)."""
    stale = _stale_test(now_ns)
    return [
        row
        for row in issues.values()
        if row["status"] in _CLAIM_STATUSES
        and _for_workers(row, include_escalations)
        and _open_to_claims(row, issues, stale)
        and _claimable_by(row, assignee, stale)
    ]


class ClaimQueue(StoreView):
    """Claim-next's candidates for anyone (`_open_to_claims`) in claim order, kept while a
    writer claims many times between rewrites (the authority's group commit): a claim looks at
    the head of the queue, not at every row. It holds until the first active lease of an
    `in_progress` row expires (that row becomes a candidate then, D3-1)."""

    def __init__(self, issues: IssueMap, now_ns: int) -> None:
        self._stale = _stale_test(now_ns)
        self._until_ns: int | None = None
        keys = []
        for row in issues.values():
            status = row["status"]
            if status not in _CLAIM_STATUSES:
                continue
            if _open_to_claims(row, issues, self._stale):
                keys.append(claim_order(row))
            else:
                self._expires_later(row)
        keys.sort()
        self._keys = keys
        self._key_of = {key[-1]: key for key in keys}

    def _expires_later(self, row: IssueRow) -> None:
        """Hold only until the row's active lease expires, if it is `in_progress` (a stale one
        of a blocked row counts once the row is unblocked, which the queue cannot follow)."""
        lease = row.get("lease")
        if row["status"] == "in_progress" and lease is not None and not self._stale(lease):
            expires = stored_nanos(lease["expires_at"])
            if self._until_ns is None or expires < self._until_ns:
                self._until_ns = expires

    def holds_at(self, now_ns: int) -> bool:
        return self._until_ns is None or now_ns < self._until_ns

    def follow(
        self, issue_id: str, before: IssueRow | None, after: IssueRow, issues: IssueMap
    ) -> bool:
        if before is not None and (before["status"] == "closed") != (after["status"] == "closed"):
            return False  # the rows it blocks may have changed too
        old = self._key_of.pop(issue_id, None)
        if old is not None:
            del self._keys[bisect.bisect_left(self._keys, old)]
        if _open_to_claims(after, issues, self._stale):
            key = claim_order(after)
            bisect.insort(self._keys, key)
            self._key_of[issue_id] = key
        else:
            self._expires_later(after)
        return True

    def choose(
        self,
        issues: IssueMap,
        assignee: str,
        now_ns: int,
        eligible: frozenset[str] | None,
        include_escalations: bool,
    ) -> IssueRow | None:
        stale = _stale_test(now_ns)
        for key in self._keys:
            row = issues[key[-1]]
            if (
                (eligible is None or key[-1] in eligible)
                and _for_workers(row, include_escalations)
                and _open_to_claims(row, issues, stale)
                and _claimable_by(row, assignee, stale)
            ):
                return row
        return None


class LeasedIds(StoreView):
    """The rows holding a lease, kept as `ClaimQueue` is, so a lease projection reads no other
    row: their ids sorted, their expiries in order (the stale ones are a prefix at any time),
    and those held against their row (not `in_progress`, or assigned to another than the
    owner: contended unless stale)."""

    def __init__(self, issues: IssueMap) -> None:
        self.ids: list[str] = []
        self._by_expiry: list[tuple[int, str]] = []
        self._expiry: dict[str, int] = {}
        self._against: set[str] = set()
        for issue_id, row in issues.items():
            if "lease" in row:
                self.ids.append(issue_id)
                self._add(issue_id, row)
        self.ids.sort()
        self._by_expiry.sort()

    def _add(self, issue_id: str, row: IssueRow) -> None:
        lease = row["lease"]
        if lease is None:
            return
        expires = stored_nanos(lease["expires_at"])
        self._expiry[issue_id] = expires
        self._by_expiry.append((expires, issue_id))
        if row["status"] != "in_progress" or row.get("assignee", "") != lease["owner"]:
            self._against.add(issue_id)

    def follow(
        self, issue_id: str, before: IssueRow | None, after: IssueRow, issues: IssueMap
    ) -> bool:
        position = bisect.bisect_left(self.ids, issue_id)
        present = position < len(self.ids) and self.ids[position] == issue_id
        if present:
            del self.ids[position]
            expires = self._expiry.pop(issue_id, None)
            if expires is not None:
                del self._by_expiry[bisect.bisect_left(self._by_expiry, (expires, issue_id))]
            self._against.discard(issue_id)
        if "lease" in after:
            self.ids.insert(position, issue_id)
            count = len(self._by_expiry)
            self._add(issue_id, after)
            if len(self._by_expiry) > count:
                bisect.insort(self._by_expiry, self._by_expiry.pop())
        return True

    def projection(self, issues: IssueMap, now_ns: int) -> LeaseProjection:
        """`lease_projection` of the map at `now_ns`, from these rows only."""
        ended = bisect.bisect_left(self._by_expiry, (now_ns + 1, ""))
        stale = sorted(issue_id for _, issue_id in self._by_expiry[:ended])
        contended = sorted(i for i in self._against if self._expiry[i] > now_ns)
        return LeaseProjection(now_ns, stale, contended, [issues[i] for i in self.ids])


def claim_next_issue(
    issues: IssueMap,
    assignee: str,
    *,
    now_ns: int,
    expiry_ns: int,
    lease_id: str | None = None,
    eligible: frozenset[str] | None = None,
    include_escalations: bool = False,
) -> IssueRow | None:
    """`issue claim-next`: the best candidate by priority, then natural id order (D3-2);
    `eligible` limits the candidates (an instruction's issue scope, D22-5)."""
    row = claim_choice(issues, assignee, now_ns, eligible, include_escalations=include_escalations)
    if row is not None:
        grant_claim(row, assignee, now_ns=now_ns, expiry_ns=expiry_ns, lease_id=lease_id)
    return row


def claim_choice(
    issues: IssueMap,
    assignee: str,
    now_ns: int,
    eligible: frozenset[str] | None = None,
    *,
    include_escalations: bool = False,
) -> IssueRow | None:
    """The row claim-next takes: the best candidate by priority, then natural id order.

    Reads only `stored_scan.SLIM_FIELDS` of claimable rows and the status of the others; a
    map with views (`ViewedIssues`) keeps its `ClaimQueue` there."""
    if isinstance(issues, ViewedIssues):
        queue = issues.views.get("claim-next")
        if not isinstance(queue, ClaimQueue) or not queue.holds_at(now_ns):
            queue = issues.views["claim-next"] = ClaimQueue(issues, now_ns)
        return queue.choose(issues, assignee, now_ns, eligible, include_escalations)
    candidates = claim_candidates(issues, assignee, now_ns, include_escalations=include_escalations)
    if eligible is not None:
        candidates = [row for row in candidates if row["id"] in eligible]
    if not candidates:
        return None
    best_priority = min(row["priority"] for row in candidates)
    return min((row for row in candidates if row["priority"] == best_priority), key=claim_order)


def grant_claim(
    row: IssueRow, assignee: str, *, now_ns: int, expiry_ns: int, lease_id: str | None
) -> None:
    """Claim the chosen row for `assignee`: a stale lease dropped, the new one granted."""
    now_text = format_autosi_z(now_ns)
    _drop_stale_lease(row, assignee, now_ns, now_text)
    _grant(row, assignee, now_text, expiry_ns, _requested_lease_id(row["id"], assignee, lease_id))


def _held_lease(row: IssueRow, assignee: str, lease_id: str | None, now_ns: int) -> LeaseRow:
    """The caller's own active lease, or the reference's refusal in its order of checks."""
    lease = row.get("lease")
    if lease is None:
        raise lease_error("lease_missing", f"issue has no lease: {row['id']}")
    if stored_nanos(lease["expires_at"]) <= now_ns:
        raise lease_error(
            "lease_stale",
            f"lease expired at {lease['expires_at']}: {row['id']} (lease_id={lease['lease_id']}); "
            "claim the issue again (issue claim or claim-next)",
        )
    mismatch = holder_mismatch(row["id"], lease, assignee, lease_id, "cli")
    if mismatch is not None:
        raise lease_error(*mismatch)
    return lease


def existing_issue(issues: IssueMap, issue_id: str) -> IssueRow:
    """The issue's row, or the reference's `lease_not_found` refusal."""
    row = issues.get(issue_id)
    if row is None:
        raise lease_error("lease_not_found", f"issue not found: {issue_id}")
    return row


def renew_lease(
    issues: IssueMap,
    issue_id: str,
    assignee: str,
    lease_id: str,
    *,
    now_ns: int,
    expiry_ns: int,
) -> IssueRow:
    """Extend the caller's active lease: same id, `acquired_at` kept, `renewed_at` now."""
    wanted = rust_trim(lease_id)
    if not wanted:
        raise lease_error("lease_id_mismatch", "lease_id is required")
    row = existing_issue(issues, issue_id)
    if row["status"] == "closed":
        raise lease_error("lease_issue_closed", f"issue is closed: {issue_id}")
    _held_lease(row, assignee, wanted, now_ns)
    _grant(row, assignee, format_autosi_z(now_ns), expiry_ns, wanted)
    return row


def release_lease(
    issues: IssueMap,
    issue_id: str,
    assignee: str,
    lease_id: str | None,
    *,
    now_ns: int,
) -> IssueRow:
    """Give the caller's active lease up: lease and assignee removed, in_progress reopened.

    Unlike the reference's transport action, only the holder of an active lease may release
    it (D3-3); a stale lease is left for claim or claim-next to reclaim.
    """
    row = existing_issue(issues, issue_id)
    wanted = rust_trim(lease_id or "") or None
    _held_lease(row, assignee, wanted, now_ns)
    now_text = format_autosi_z(now_ns)
    del row["lease"]
    row.pop("assignee", None)
    if row["status"] == "in_progress":
        set_status(row, "open", now_text)
    row["updated_at"] = now_text
    return row


class LeaseChange(NamedTuple):
    """An issue after a lease renewal or release, and the time its lease state is read at."""

    row: IssueRow
    now_ns: int

    @property
    def state(self) -> LeaseState:
        return lease_state(self.row, self.now_ns)


class LeaseProjection(NamedTuple):
    """Stale and contended leases (disjoint sets), ids sorted, checked at `checked_at_ns`."""

    checked_at_ns: int
    stale_issue_ids: list[str]
    contended_issue_ids: list[str]
    leased: list[IssueRow]
    """Every issue holding a lease, by id (the items of the projection)."""


def lease_projection(issues: IssueMap, now_ns: int) -> LeaseProjection:
    """`lease_state` and `is_contended` of every leased row, in one pass with the fast stale
    test (a claim computes this under the store lock: over every row, or over the leased ids
    a map with views keeps)."""
    if isinstance(issues, ViewedIssues):
        kept = issues.views.get("leased")
        if not isinstance(kept, LeasedIds):
            kept = issues.views["leased"] = LeasedIds(issues)
        return kept.projection(issues, now_ns)
    stale_at_now = _stale_test(now_ns)
    stale, contended, leased = [], [], []
    for issue_id, row in issues.items():
        if "lease" not in row:
            continue
        leased.append(issue_id)
        lease = row["lease"]
        if lease is None:
            continue
        if stale_at_now(lease):
            stale.append(issue_id)
        elif row["status"] != "in_progress" or row.get("assignee", "") != lease["owner"]:
            contended.append(issue_id)
    stale.sort()
    contended.sort()
    leased.sort()
    return LeaseProjection(now_ns, stale, contended, [issues[issue_id] for issue_id in leased])
