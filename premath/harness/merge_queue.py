"""The merge queue: a worker's verified branch counts as done only once its merge onto the
current integration head has passed the issue's verification in a clean checkout and the
integration branch has moved to that merge (specs/remote-workers.md "Merge queue").

One change at a time per target, with merge commits (`--no-ff`): each integration commit is one
issue's branch merged onto the head before it, verified alone on top of everything landed
earlier. The remote serializes the queue: the integration branch only moves by a plain push,
which the remote refuses unless it is a fast-forward, so of two workers (or two coordinators)
that merged onto the same head, the second is refused, fetches the new head, merges and verifies
again. Nothing is ever forced: no landed merge is lost, none lands twice, and commits pushed to
the integration branch by hand are built on, never rewritten.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal, Protocol

from premath.errors import InputInvalid
from premath.harness.refs import commit_ref
from premath.models.merge_queue import QUEUE_NOTE_HEADER
from premath.runner.git import GitRun, run_git

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.harness.commands import CommandRun
    from premath.models.merge_queue import QueueState

DEFAULT_INTEGRATION_BRANCH = "premath/integration"
IntegrationFailure = Literal[
    "merge_conflict", "integration_verify_failed", "integration_push_refused"
]
INTEGRATION_FAILURES: tuple[IntegrationFailure, ...] = (
    "merge_conflict",
    "integration_verify_failed",
    "integration_push_refused",
)
MAX_RACES = 16
"""Merges redone after losing the push to another worker before giving the issue back; each
lost race means another change landed, so a fleet of N workers needs at most N - 1 in a row."""
OUTPUT_TAIL_CHARS = 2000
_REFUSED_AS_STALE = (
    "non-fast-forward",
    "fetch first",
    "stale info",
    "failed to update ref",
    "cannot lock ref",
)

Verify = Callable[[str], "CommandRun"]
"""Runs the issue's verification with the given folder as its working directory."""
Report = Callable[[str], None]
Mark = Callable[["QueueState", dict[str, str]], None]
"""Hears each transient state as the queue enters it, with `branch`, `integrationBranch` and
(merging, verifying) `onto`: the step records it on the issue through its authority."""


def queue_ref(state: QueueState, detail: str) -> str:
    """`merge-queue://<state>/<detail>`: the queue state a trajectory row carries."""
    return f"merge-queue://{state}/{detail}"


@dataclass(frozen=True, slots=True)
class Landing:
    """What the queue did with one branch: landed as `commit` on the integration branch, or
    failed with its class (the integration branch untouched)."""

    integration_branch: str
    branch: str
    commit: str | None
    """The integration commit (landed), or the merge that was refused (failed)."""
    onto: str | None
    """The integration head the branch was merged onto."""
    failure: IntegrationFailure | None = None
    message: str = ""
    conflict_paths: tuple[str, ...] = ()
    output_tail: str = ""
    landed_branch: str | None = None
    """`--land`: the default branch fast-forwarded to `commit` (None: not asked, or refused)."""
    land_message: str = ""
    races: int = 0
    passed: tuple[str, ...] = ()
    """`merge-queue://queued|merging|verifying/...` refs of the states passed, in order."""

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def state(self) -> QueueState:
        return "landed" if self.ok else "failed"

    def refs(self) -> tuple[str, ...]:
        """The integration commit as a witness ref: what a closed issue cites."""
        if self.ok and self.commit:
            return (commit_ref(self.integration_branch, self.commit),)
        return ()

    def state_ref(self) -> str:
        """The queue's last state for the trajectory row: landed (where) or failed (why)."""
        if self.ok:
            return queue_ref("landed", f"{self.integration_branch}@{self.commit}")
        return queue_ref("failed", self.failure or "unknown")

    def state_refs(self) -> tuple[str, ...]:
        """Every state the branch passed through, then the verdict: the trajectory row's."""
        return (*self.passed, self.state_ref())

    def note(self, worker_id: str, step_id: str) -> str:
        """The `[harness-merge-queue]` note the issue keeps."""
        lines = [
            QUEUE_NOTE_HEADER,
            f"worker: {worker_id}",
            f"step: {step_id}",
            f"state: {self.state}",
            f"branch: {self.branch}",
            f"integrationBranch: {self.integration_branch}",
            f"onto: {self.onto or 'none'}",
            f"integrationCommit: {self.commit if self.ok else 'none'}",
        ]
        if self.landed_branch is not None:
            lines.append(f"landed: {self.landed_branch}")
        elif self.land_message:
            lines.append(f"notLanded: {self.land_message}")
        if self.failure is not None:
            lines += [f"failureClass: {self.failure}", f"reason: {self.message}"]
            lines += [f"conflictPath: {path}" for path in self.conflict_paths]
        return "\n".join(lines)

    def to_document(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "integrationBranch": self.integration_branch,
            "branch": self.branch,
            "integrationCommit": self.commit if self.ok else None,
            "onto": self.onto,
            "failureClass": self.failure,
            "message": self.message,
            "conflictPaths": list(self.conflict_paths),
            "outputTail": self.output_tail,
            "landedBranch": self.landed_branch,
            "landMessage": self.land_message,
            "races": self.races,
        }


def _tail(run: CommandRun) -> str:
    outcome = run.outcome
    text = f"{outcome.stdout_tail}{outcome.stderr_tail}".strip()
    if outcome.status == "timeout":
        text = f"{text}\n(timed out: the verification's deadline passed)".strip()
    return text[-OUTPUT_TAIL_CHARS:]


class Delivering(Protocol):
    """What the queue needs of the delivery it lands (harness/delivery.py's `GitDelivery`): its
    clone and git identity, the base branch; once prepared, the queue is the delivery's."""

    home: str
    worktree: str
    base_ref: str | None
    identity: dict[str, str]
    queue: MergeQueue | None


class MergeQueue:
    """The integration branch of one worker's remote, merged onto in `<home>/integration`, a
    worktree of the worker's clone (its objects shared, its checkout cleaned for each merge)."""

    def __init__(
        self, delivery: Delivering, integration_branch: str = DEFAULT_INTEGRATION_BRANCH
    ) -> None:
        self.delivery = delivery
        self.integration_branch = integration_branch
        self.land = False
        self.checkout = os.path.join(delivery.home, "integration")

    def _git(self, *args: str, where: str | None = None) -> GitRun:
        return run_git(args, cwd=where or self.checkout, env=self.delivery.identity)

    def _must(self, what: str, *args: str, where: str | None = None) -> GitRun:
        run = self._git(*args, where=where)
        if not run.ok:
            raise InputInvalid(
                f"{what} failed in {where or self.checkout} (merge queue of "
                f"{self.integration_branch}): {run.why()}"
            )
        return run

    def prepare(self, *, land: bool) -> None:
        """After the clone is prepared: check the branch name, make the merge worktree, and
        make the worker start each issue from the integration head."""
        clone = self.delivery.worktree
        checked = self._git("check-ref-format", "--branch", self.integration_branch, where=clone)
        if not checked.ok or self.integration_branch == self.delivery.base_ref:
            raise InputInvalid(
                f"--integration-branch {self.integration_branch!r} is not a usable branch name "
                "(it must be a valid branch other than the base branch)"
            )
        self.land = land
        # Made afresh: a checkout left by an earlier run may belong to a clone since removed.
        shutil.rmtree(self.checkout, ignore_errors=True)
        self._must("git worktree prune", "worktree", "prune", where=clone)
        # At the fetched start, not the clone's HEAD: a remote whose HEAD names no branch
        # leaves the clone without one.
        start = self.start_point()
        self._must(
            "git worktree add", "worktree", "add", "--detach", self.checkout, start, where=clone
        )
        self.delivery.queue = self

    def start_point(self) -> str:
        """Fetch the integration head (else, before the first landing, the base branch): the
        ref each issue's work starts from, so it holds every closed blocker's work."""
        return f"refs/remotes/origin/{self._fetch_head()[0]}"

    def _fetch_head(self) -> tuple[str, str]:
        """(branch, commit) of the integration head, or of the base branch while the
        integration branch does not exist yet (it is created from the base on first use)."""
        base = self.delivery.base_ref
        assert base is not None  # settled by the delivery's prepare
        heads = [self.integration_branch, base]
        listed = self._git(
            "ls-remote",
            "origin",
            *(f"refs/heads/{name}" for name in heads),
            where=self.delivery.worktree,
        )
        if not listed.ok:
            raise InputInvalid(f"git ls-remote failed for the merge queue: {listed.why()}")
        found = {}
        for line in listed.stdout.splitlines():
            sha, _, ref = line.partition("\t")
            found[ref.removeprefix("refs/heads/")] = sha
        name = next((head for head in heads if head in found), None)
        if name is None:
            raise InputInvalid(f"the remote has neither {self.integration_branch} nor {base}")
        tracking = f"refs/remotes/origin/{name}"
        self._must(
            "git fetch",
            "fetch",
            "--quiet",
            "--no-tags",
            "origin",
            f"+refs/heads/{name}:{tracking}",
            where=self.delivery.worktree,
        )
        return name, found[name]

    def submit(
        self,
        branch: str,
        commit: str,
        verify: Verify,
        report: Report,
        mark: Mark = lambda _state, _fields: None,
    ) -> Landing:
        """Merge `commit` onto the integration head, verify the result, move the branch; again
        on the new head while another change wins the push. `mark` hears each state entered."""
        passed: list[str] = []

        def enter(state: QueueState, detail: str, onto: str | None = None) -> None:
            passed.append(queue_ref(state, detail))
            fields = {"branch": branch, "integrationBranch": self.integration_branch}
            mark(state, fields if onto is None else {**fields, "onto": onto})

        landing = self._submit(branch, commit, verify, report, enter)
        return replace(landing, passed=tuple(dict.fromkeys(passed)))

    def _submit(
        self,
        branch: str,
        commit: str,
        verify: Verify,
        report: Report,
        enter: Callable[..., None],
    ) -> Landing:
        report(f"queued {branch}@{commit[:12]} for {self.integration_branch}")
        enter("queued", f"{branch}@{commit}")
        for race in range(MAX_RACES):
            onto, head = self._fetch_head()
            report(f"merging {branch} onto {onto}@{head[:12]}")
            enter("merging", f"{onto}@{head}", head)
            merged = self._merge(branch, commit, head)
            if isinstance(merged, Landing):
                return merged
            report(f"verifying {self.integration_branch}@{merged[:12]} in {self.checkout}")
            enter("verifying", f"{self.integration_branch}@{merged}", head)
            checked = verify(self.checkout)
            if checked.outcome.status != "ok":
                return Landing(
                    self.integration_branch,
                    branch,
                    merged,
                    head,
                    "integration_verify_failed",
                    f"the verification failed on {branch} merged onto {head[:12]} "
                    f"({checked.outcome.status}, exit {checked.outcome.exit_code})",
                    output_tail=_tail(checked),
                    races=race,
                )
            pushed = self._git(
                "push", "--porcelain", "origin", f"HEAD:refs/heads/{self.integration_branch}"
            )
            if pushed.ok:
                return self._landed(branch, merged, head, race, report)
            why = _refusal(pushed)
            if not self._lost_race(why, head if onto == self.integration_branch else None):
                return Landing(
                    self.integration_branch,
                    branch,
                    merged,
                    head,
                    "integration_push_refused",
                    why,
                    races=race,
                )
            report(f"{self.integration_branch} moved while verifying ({why}): merging again")
        return Landing(
            self.integration_branch,
            branch,
            None,
            None,
            "integration_push_refused",
            f"{self.integration_branch} moved under every one of {MAX_RACES} merges",
            races=MAX_RACES,
        )

    def _lost_race(self, why: str, head: str | None) -> bool:
        """The push was refused because another change landed first: the remote said so (not a
        fast-forward, or its ref lock held by a push in flight), or the integration head is no
        longer `head` (None: the branch did not exist)."""
        if any(marker in why for marker in _REFUSED_AS_STALE):
            return True
        listed = self._git(
            "ls-remote",
            "origin",
            f"refs/heads/{self.integration_branch}",
            where=self.delivery.worktree,
        )
        return listed.ok and listed.stdout.split()[:1] != ([head] if head else [])

    def _merge(self, branch: str, commit: str, head: str) -> str | Landing:
        """The merge commit in a clean checkout of `head`, or the conflict."""
        self._must("git checkout", "checkout", "--quiet", "--detach", "--force", head)
        self._must("git clean", "clean", "-ffdxq")
        message = f"Merge {branch} into {self.integration_branch}"
        merged = self._git(
            "merge", "--no-ff", "--no-edit", "--no-verify", "--quiet", "-m", message, commit
        )
        if not merged.ok:
            listed = self._git("diff", "--name-only", "--diff-filter=U")
            paths = tuple(line for line in listed.stdout.splitlines() if line)
            self._git("merge", "--abort")
            if not paths:
                raise InputInvalid(f"git merge of {branch} failed: {merged.why()}")
            return Landing(
                self.integration_branch,
                branch,
                None,
                head,
                "merge_conflict",
                f"{branch} conflicts with {self.integration_branch}@{head[:12]} in "
                + ", ".join(paths),
                conflict_paths=paths,
            )
        return self._must("git rev-parse", "rev-parse", "HEAD").stdout.strip()

    def _landed(self, branch: str, merged: str, head: str, races: int, report: Report) -> Landing:
        report(f"landed {branch} as {self.integration_branch}@{merged[:12]}")
        landed_branch, land_message = None, ""
        if self.land:
            base = self.delivery.base_ref
            assert base is not None
            moved = self._git("push", "--porcelain", "origin", f"HEAD:refs/heads/{base}")
            if moved.ok:
                landed_branch = base
                report(f"--land: {base} fast-forwarded to {merged[:12]}")
            else:
                land_message = f"{base} was not fast-forwarded: {_refusal(moved)}"
                report(f"--land: {land_message}")
        return Landing(
            self.integration_branch,
            branch,
            merged,
            head,
            landed_branch=landed_branch,
            land_message=land_message,
            races=races,
        )


def _refusal(pushed: GitRun) -> str:
    refused = [line for line in pushed.stdout.splitlines() if line.startswith("!")]
    return refused[0].strip() if refused else pushed.why()
