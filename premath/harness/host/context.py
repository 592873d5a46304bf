"""Where a program's host calls run: the repository root, default paths, the step it serves.

`premath scheme-eval` runs with the reference's defaults (paths relative to the working folder,
`--repo-root .`). A worker's work step (`--work-program`) runs the same evaluator with the loop's
own paths as defaults, the claimed issue as every call's `issueId`, the step's lineage refs on
every row, and the step's deadline.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime

from premath.models.vocabulary import DEFAULT_ISSUES_PATH
from premath.store.issues_file import IssueMap, WarmStores

TYPE_CHECKING = False
if TYPE_CHECKING:
    from premath.transport.instruction_link import WitnessRules

DEFAULT_SESSION_PATH = ".premath/harness_session.json"
DEFAULT_LEDGER_PATH = ".premath/harness_feature_ledger.json"
DEFAULT_SURFACE_PATH = "artifacts/observation/latest.json"
DEFAULT_TRAJECTORY_PATH = ".premath/harness_trajectory.jsonl"


@dataclass(frozen=True)
class HostContext:
    repo_root: str = "."
    """Instruction witnesses are read under it; path arguments must resolve inside it."""
    base_dir: str | None = None
    """Relative path arguments resolve here (None: as given, against the working folder)."""
    issues_path: str = DEFAULT_ISSUES_PATH
    session_path: str = DEFAULT_SESSION_PATH
    ledger_path: str = DEFAULT_LEDGER_PATH
    surface_path: str = DEFAULT_SURFACE_PATH
    trajectory_path: str = DEFAULT_TRAJECTORY_PATH
    """Where each call's row is appended (and `harness.trajectory.append`'s default)."""
    lineage_refs: tuple[str, ...] = ()
    """Added to every call's row (a worker step's site lineage)."""
    deadline: float | None = None
    """`time.monotonic()` after which no further call starts."""
    witness_rules: WitnessRules | None = None
    """How far mutations trust their instruction witness (None: the gate's safe defaults, MAC
    required, D22-2)."""
    stores: WarmStores | None = None
    """Parsed issue stores kept between the reads of a program (revalidated by one `stat` per
    read): a program of reads parses its store once, not once per call."""

    def resolve(self, path: str) -> str:
        """A path argument as the action opens it."""
        if self.base_dir in (None, ".") or os.path.isabs(path):
            return path
        assert self.base_dir is not None
        return os.path.join(self.base_dir, path)

    def read_store(self, path: str, now: datetime) -> IssueMap:
        """The issue store at `path` for a read-only action (never changed by the caller)."""
        if self.stores is None:
            from premath.issues.memory import read_store

            return read_store(path, now)
        return self.stores.read(path, now)
