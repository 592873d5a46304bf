"""The lease state machine against a dict oracle: never two holders, no lease on a closed issue.

Random sequences of claim, claim-next, renew, release, status updates and clock advances run on
the pure lease functions; after every step the store must agree with the oracle (who holds an
active lease on which issue, until when).
"""

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from premath.errors import PremathError
from premath.issues import leases
from premath.issues.lifecycle import is_in_progress, set_status
from premath.timefmt import NANOS_PER_SECOND, format_autosi_z

ISSUES = ("bd-1", "bd-2", "bd-10")
WORKERS = ("w1", "w2", "w3")
STATUSES = ("open", "in_progress", "closed", "blocked", "IN_PROGRESS")
T0 = 1_772_359_200 * NANOS_PER_SECOND  # 2026-03-01T10:00:00Z


def fresh_row(issue_id: str) -> dict:
    stamp = format_autosi_z(T0)
    return {
        "id": issue_id,
        "title": issue_id,
        "status": "open",
        "priority": 2,
        "issue_type": "task",
        "created_at": stamp,
        "updated_at": stamp,
        "ephemeral": False,
    }


class LeaseMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = T0
        self.issues = {issue_id: fresh_row(issue_id) for issue_id in ISSUES}
        self.holders: dict[str, tuple[str, int]] = {}  # issue -> (owner, expiry) per the oracle

    def active_holder(self, issue_id: str) -> str | None:
        held = self.holders.get(issue_id)
        return held[0] if held is not None and held[1] > self.now else None

    def expiry(self, ttl: int) -> int:
        return self.now + ttl * NANOS_PER_SECOND

    @rule(
        issue_id=st.sampled_from(ISSUES), worker=st.sampled_from(WORKERS), ttl=st.integers(30, 900)
    )
    def claim(self, issue_id: str, worker: str, ttl: int) -> None:
        holder = self.active_holder(issue_id)
        row = self.issues[issue_id]
        foreign_assignee = holder is None and row.get("assignee", worker) != worker
        stale_lease = "lease" in row and leases.lease_state(row, self.now) == "stale"
        failure = None
        try:
            leases.claim_issue(
                self.issues, issue_id, worker, now_ns=self.now, expiry_ns=self.expiry(ttl)
            )
        except PremathError as exc:
            failure = exc.failure_class  # type: ignore[attr-defined]
        if failure is not None:
            assert failure in ("lease_contention_active", "lease_issue_closed")
            assert (
                (holder not in (None, worker))
                or row["status"] == "closed"
                or (foreign_assignee and not stale_lease)
            )
            return
        assert holder in (None, worker), "a second owner claimed an actively leased issue"
        self.holders[issue_id] = (worker, self.expiry(ttl))

    @rule(worker=st.sampled_from(WORKERS), ttl=st.integers(30, 900))
    def claim_next(self, worker: str, ttl: int) -> None:
        row = leases.claim_next_issue(
            self.issues, worker, now_ns=self.now, expiry_ns=self.expiry(ttl)
        )
        if row is None:
            return
        assert self.active_holder(row["id"]) in (None, worker)
        self.holders[row["id"]] = (worker, self.expiry(ttl))

    @rule(
        issue_id=st.sampled_from(ISSUES),
        worker=st.sampled_from(WORKERS),
        ttl=st.integers(30, 900),
        use_stored_id=st.booleans(),
    )
    def renew(self, issue_id: str, worker: str, ttl: int, use_stored_id: bool) -> None:
        row = self.issues[issue_id]
        lease_id = row["lease"]["lease_id"] if use_stored_id and "lease" in row else "guess"
        holder = self.active_holder(issue_id)
        try:
            leases.renew_lease(
                self.issues, issue_id, worker, lease_id, now_ns=self.now, expiry_ns=self.expiry(ttl)
            )
        except PremathError:
            assert holder != worker or lease_id == "guess" or row["status"] == "closed"
            return
        assert holder == worker, "someone renewed a lease they do not hold"
        self.holders[issue_id] = (worker, self.expiry(ttl))

    @rule(issue_id=st.sampled_from(ISSUES), worker=st.sampled_from(WORKERS))
    def release(self, issue_id: str, worker: str) -> None:
        holder = self.active_holder(issue_id)
        try:
            leases.release_lease(self.issues, issue_id, worker, None, now_ns=self.now)
        except PremathError:
            assert holder != worker
            return
        assert holder == worker, "someone released a lease they do not hold"
        del self.holders[issue_id]
        assert "lease" not in self.issues[issue_id]
        assert "assignee" not in self.issues[issue_id]

    @rule(issue_id=st.sampled_from(ISSUES), status=st.sampled_from(STATUSES))
    def update_status(self, issue_id: str, status: str) -> None:
        set_status(self.issues[issue_id], status, format_autosi_z(self.now))
        if not is_in_progress(status):
            self.holders.pop(issue_id, None)

    @rule(seconds=st.integers(1, 1200))
    def advance(self, seconds: int) -> None:
        self.now += seconds * NANOS_PER_SECOND

    @precondition(lambda self: bool(self.holders))
    @rule()
    def expire_everything(self) -> None:
        self.now = max(expiry for _, expiry in self.holders.values())

    @invariant()
    def store_agrees_with_the_oracle(self) -> None:
        for issue_id, row in self.issues.items():
            lease = row.get("lease")
            holder = self.active_holder(issue_id)
            if holder is not None:
                assert lease is not None
                assert lease["owner"] == holder
                assert leases.stored_nanos(lease["expires_at"]) == self.holders[issue_id][1]
            elif lease is not None:
                assert leases.lease_state(row, self.now) == "stale"

    @invariant()
    def closed_issues_hold_no_lease(self) -> None:
        for row in self.issues.values():
            if row["status"] == "closed":
                assert "lease" not in row
            if "lease" in row:
                assert is_in_progress(row["status"])


TestLeaseMachine = LeaseMachine.TestCase
