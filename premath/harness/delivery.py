"""A remote worker's git side: its own clone, a clean worktree per issue, the verified work
delivered as a commit on branch `premath/<issue id>` of the remote (specs/remote-workers.md).

The worker's home on its node holds `repo/`, a clone of `--repo` whose working tree is the
worker's worktree (work and verify run there), next to the loop's own `.premath/` artifacts, which
are therefore never committed. Before each claimed issue's work the worktree is fetched and reset
to the base branch (`--base-ref`, default the remote's HEAD branch) and cleaned; after a
MutationReady success, everything in it is committed (`--allow-empty`: a step that changed
nothing still leaves its evidence) and pushed.

No branch is ever overwritten: the push is a plain one (never forced), and a branch that already
exists on the remote is only accepted when it holds this very commit (a retry after a lost
answer); with other content it is `delivery_branch_exists`. A push the remote refuses is
`delivery_push_refused`. The step then finishes the issue through its authority without closing
it (specs/remote-workers.md "Delivery failures").
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from premath.errors import InputInvalid
from premath.harness.refs import commit_ref
from premath.runner.git import GitRun, run_git
from premath.store.git_checkout import checkout_commit

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.harness.merge_queue import MergeQueue

BRANCH_PREFIX = "premath/"
REDO_SEPARATOR = "+"
"""`premath/<issue>+<n>`: the n-th delivery of an issue whose earlier branch the merge queue
refused; `+` never occurs in `branch_for`'s names, so no issue's branch can collide with it."""
DeliveryFailure = Literal[
    "delivery_commit_failed", "delivery_branch_exists", "delivery_push_refused"
]
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_CREDENTIALS = re.compile(r"(?<=://)[^/@]*@")


def branch_for(issue_id: str) -> str:
    """`premath/<issue id>`, the id made a valid single ref component (`git check-ref-format`):
    runs of other characters become `_`, no leading `.`, no `..`, no `.lock` ending."""
    name = _UNSAFE.sub("_", issue_id).strip(".").replace("..", "_") or "issue"
    if name.endswith(".lock"):
        name = name[: -len(".lock")] + "_lock"
    return BRANCH_PREFIX + name


def shown_remote(remote: str) -> str:
    """The remote as records name it: credentials in a URL (`https://user:token@host`) cut."""
    return _CREDENTIALS.sub("", remote)


@dataclass(frozen=True, slots=True)
class Delivered:
    """What a delivery did: the commit and branch, and its failure class (None: delivered)."""

    branch: str
    commit: str | None
    remote: str
    failure: DeliveryFailure | None = None
    message: str = ""
    already: bool = False
    """The branch already held this commit (a retry after a lost answer)."""

    @property
    def ok(self) -> bool:
        return self.failure is None

    def refs(self) -> tuple[str, ...]:
        return (commit_ref(self.branch, self.commit),) if self.ok and self.commit else ()

    def note(self, worker_id: str, step_id: str) -> str:
        """The `[harness-delivery]` note the issue keeps (what a reviewer looks for)."""
        lines = [
            "[harness-delivery]",
            f"worker: {worker_id}",
            f"step: {step_id}",
            f"remote: {self.remote}",
            f"branch: {self.branch}",
            f"commit: {self.commit or 'none'}",
        ]
        if self.failure is not None:
            lines += [f"failureClass: {self.failure}", f"reason: {self.message}"]
        return "\n".join(lines)

    def to_document(self) -> dict[str, Any]:
        return {
            "remote": self.remote,
            "branch": self.branch,
            "commit": self.commit,
            "outcome": self.failure or ("already_delivered" if self.already else "pushed"),
            "message": self.message,
            "witnessRefs": list(self.refs()),
        }


class GitDelivery:
    """One worker's clone of `remote` under `home`, and its deliveries."""

    def __init__(self, remote: str, home: str, worker_id: str, base_ref: str | None = None) -> None:
        local = os.path.exists(remote) and "://" not in remote
        self.remote = os.path.abspath(remote) if local else remote
        self.home = os.path.abspath(home)
        self.worker_id = worker_id
        self.base_ref = base_ref
        self.worktree = os.path.join(self.home, "repo")
        self.queue: MergeQueue | None = None
        """The merge queue (specs/remote-workers.md "Merge queue"): work starts from its
        integration head, and an earlier refused branch of the issue is kept beside a new one."""
        self.identity = {
            "GIT_AUTHOR_NAME": f"premath {worker_id}",
            "GIT_AUTHOR_EMAIL": f"{worker_id}@premath.invalid",
            "GIT_COMMITTER_NAME": f"premath {worker_id}",
            "GIT_COMMITTER_EMAIL": f"{worker_id}@premath.invalid",
        }

    def _git(self, *args: str, where: str | None = None) -> GitRun:
        return run_git(args, cwd=where or self.worktree, env=self.identity)

    def _must(self, what: str, *args: str, where: str | None = None) -> GitRun:
        run = self._git(*args, where=where)
        if not run.ok:
            raise InputInvalid(
                f"{what} failed for {shown_remote(self.remote)} in {self.worktree}: {run.why()}"
            )
        return run

    def prepare(self, report: Callable[[str], None] = lambda _line: None) -> None:
        """Clone the remote into the worker's home (or point an existing clone at it and
        fetch), and settle the base branch; a remote that cannot be cloned is refused now,
        before any claim. `report` hears how the base branch was chosen when it was a guess."""
        os.makedirs(self.home, exist_ok=True)
        if os.path.isdir(os.path.join(self.worktree, ".git")):
            self._must("git remote set-url", "remote", "set-url", "origin", self.remote)
        else:
            self._must(
                "git clone",
                "clone",
                "--quiet",
                "--no-tags",
                "--origin",
                "origin",
                self.remote,
                self.worktree,
                where=self.home,
            )
        if self.base_ref is None:
            self.base_ref = self._remote_head(report)

    def _remote_head(self, report: Callable[[str], None] = lambda _line: None) -> str:
        """The branch the remote's HEAD names; else, when HEAD names a branch that does not
        exist (`git init --bare` then a push of `main` only), its one branch, said on `report`."""
        found = self._git("ls-remote", "--symref", "origin", "HEAD")
        for line in found.stdout.splitlines():
            parts = line.split()
            if found.ok and len(parts) >= 2 and parts[0] == "ref:" and parts[-1] == "HEAD":
                return parts[1].removeprefix("refs/heads/")
        heads = self._git("ls-remote", "--heads", "origin")
        branches = [  # premath's own branches (deliveries, the merge queue's) are no base
            name
            for name in (
                parts[1].removeprefix("refs/heads/")
                for parts in (line.split() for line in heads.stdout.splitlines())
                if heads.ok and len(parts) == 2
            )
            if not name.startswith(BRANCH_PREFIX)
        ]
        remote = shown_remote(self.remote)
        if len(branches) == 1:
            report(
                f"[worker:{self.worker_id}] the HEAD of {remote} names no branch; using its only "
                f"branch {branches[0]} (pass --base-ref BRANCH to choose)"
            )
            return branches[0]
        if branches:
            shown = ", ".join(branches[:5]) + (", ..." if len(branches) > 5 else "")
            raise InputInvalid(
                f"cannot tell the default branch of {remote}: its HEAD names no branch and it has "
                f"{len(branches)} branches ({shown}): pass --base-ref BRANCH"
            )
        raise InputInvalid(
            f"cannot tell the default branch of {remote} (an empty repository?): push a first "
            "commit, or pass --base-ref BRANCH"
        )

    def reset(self) -> None:
        """The worktree at the freshly fetched start (the base branch, or the merge queue's
        integration head), detached and clean."""
        if self.queue is not None:
            tracking = self.queue.start_point()
        else:
            base = self.base_ref or self._remote_head()
            tracking = f"refs/remotes/origin/{base}"
            refspec = f"+refs/heads/{base}:{tracking}"
            self._must("git fetch", "fetch", "--quiet", "--no-tags", "origin", refspec)
        self._must("git checkout", "checkout", "--quiet", "--detach", "--force", tracking)
        self._must("git clean", "clean", "-ffdxq")

    def deliver(self, issue_id: str, title: str, step_id: str, evidence: str | None) -> Delivered:
        """Commit the worktree and push it to `premath/<issue id>`; never overwrite a branch."""
        branch = branch_for(issue_id)
        remote = shown_remote(self.remote)
        trailers = [f"Premath-Issue: {issue_id}", f"Premath-Worker: {self.worker_id}"]
        trailers.append(f"Premath-Step: {step_id}")
        if evidence:
            trailers.append(f"Premath-Join-Witness: {evidence}")
        message = f"{title.strip() or issue_id}\n\n" + "\n".join(trailers) + "\n"
        added = self._git("add", "--all")
        committed = (
            added
            if not added.ok
            else self._git(
                "commit",
                "--quiet",
                "--allow-empty",
                "--no-verify",
                "--cleanup=verbatim",
                "-m",
                message,
            )
        )
        # The worktree is detached: HEAD names the new commit itself (no rev-parse to spawn).
        commit = checkout_commit(Path(self.worktree)) if committed.ok else None
        if commit is None:
            why = committed.why() if not committed.ok else "no commit at HEAD after `git commit`"
            return Delivered(branch, None, remote, "delivery_commit_failed", why)
        patterns = [f"refs/heads/{branch}"]
        if self.queue is not None:
            patterns.append(f"refs/heads/{branch}{REDO_SEPARATOR}*")
        existing = self._git("ls-remote", "origin", *patterns)
        if not existing.ok:
            return Delivered(branch, commit, remote, "delivery_push_refused", existing.why())
        taken = {
            ref.removeprefix("refs/heads/"): sha
            for sha, _, ref in (line.partition("\t") for line in existing.stdout.splitlines())
        }
        held = [name for name, sha in taken.items() if sha == commit]
        if held:
            return Delivered(held[0], commit, remote, already=True)
        if branch in taken:
            if self.queue is None or not self._delivered_before(issue_id, branch):
                return Delivered(
                    branch,
                    commit,
                    remote,
                    "delivery_branch_exists",
                    f"{branch} already exists on the remote at {taken[branch]}, with other "
                    "content; it is never overwritten: review it (merge or delete it), then "
                    "reopen the issue",
                )
            # A redo after the merge queue refused an earlier delivery: that branch is kept.
            branch = next(
                f"{branch}{REDO_SEPARATOR}{n}"
                for n in itertools.count(2)
                if f"{branch}{REDO_SEPARATOR}{n}" not in taken
            )
        pushed = self._git("push", "--porcelain", "origin", f"HEAD:refs/heads/{branch}")
        if not pushed.ok:
            refused = [line for line in pushed.stdout.splitlines() if line.startswith("!")]
            why = refused[0].strip() if refused else pushed.why()
            return Delivered(branch, commit, remote, "delivery_push_refused", why)
        return Delivered(branch, commit, remote)

    def _delivered_before(self, issue_id: str, branch: str) -> bool:
        """The remote's `branch` is an earlier delivery of this very issue (its tip carries our
        `Premath-Issue` trailer), not someone else's work under that name."""
        if not self._git("fetch", "--quiet", "--no-tags", "origin", f"refs/heads/{branch}").ok:
            return False
        trailer = "%(trailers:key=Premath-Issue,valueonly)"
        shown = self._git("show", "--no-patch", f"--format={trailer}", "FETCH_HEAD")
        return shown.ok and issue_id in shown.stdout.split("\n")
