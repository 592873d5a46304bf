"""Where one loop's memory roots are: the issues file, session, ledger and trajectory, resolved
once against the repository root, and the folders beside them (specs/harness-loop.md "Options").
Its own module so the issue-memory side (harness/authority.py) can take the paths without
importing the worker's whole configuration, which builds that side."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from premath.errors import NotFound
from premath.models.vocabulary import DEFAULT_ISSUES_PATH

DEFAULT_SESSION_PATH = ".premath/harness_session.json"
DEFAULT_LEDGER_PATH = ".premath/harness_feature_ledger.json"
DEFAULT_TRAJECTORY_PATH = ".premath/harness_trajectory.jsonl"


@dataclass(frozen=True, slots=True)
class LoopPaths:
    """Absolute paths of the memory roots (relative ones resolve against `repo_root`)."""

    repo_root: str
    issues: str
    session: str
    ledger: str
    trajectory: str
    steps_dir: str
    """Per-step command logs and step witnesses: `<dir of trajectory>/harness_steps`."""
    join_witness_dir: str

    @classmethod
    def resolve(
        cls,
        repo_root: str = ".",
        *,
        issues: str = DEFAULT_ISSUES_PATH,
        session: str = DEFAULT_SESSION_PATH,
        ledger: str = DEFAULT_LEDGER_PATH,
        trajectory: str = DEFAULT_TRAJECTORY_PATH,
    ) -> LoopPaths:
        root = os.path.abspath(repo_root)

        def under_root(path: str) -> str:
            return os.path.normpath(os.path.join(root, path))

        trajectory_abs = under_root(trajectory)
        premath_dir = os.path.dirname(trajectory_abs)
        return cls(
            repo_root=root,
            issues=under_root(issues),
            session=under_root(session),
            ledger=under_root(ledger),
            trajectory=trajectory_abs,
            steps_dir=os.path.join(premath_dir, "harness_steps"),
            join_witness_dir=os.path.join(premath_dir, "join-witnesses"),
        )

    def require_issues(self) -> None:
        """Refuse to start (writing nothing) where there is no issue memory: outside a
        project a loop command would otherwise leave a `.premath/` behind and fail."""
        if not os.path.isfile(self.issues):
            raise NotFound(
                f"issues file not found: {self.issues}: no premath project here (no .premath/ "
                "in this folder or above); start one with `premath issue add TITLE` or "
                "`premath init`, or pass --repo-root"
            )

    def relative(self, path: str) -> str:
        """`path` as committed artifacts name it (divergence D16-7): relative to the repository
        root and `/`-separated, so the same run committed from two machines is the same bytes."""
        return Path(os.path.relpath(path, self.repo_root)).as_posix()

    def for_worker(self, worker_id: str) -> LoopPaths:
        """Session and ledger of one worker among many (D5-11: the reference's workers shared
        one session and one ledger and overwrote each other); the trajectory stays shared."""
        return replace(
            self,
            session=per_worker_path(self.session, worker_id),
            ledger=per_worker_path(self.ledger, worker_id),
        )


def per_worker_path(path: str, worker_id: str) -> str:
    """`.premath/harness_session.json` -> `.premath/harness_session.<worker>.json`."""
    target = Path(path)
    return str(target.with_name(f"{target.stem}.{worker_id}{target.suffix}"))
