"""The same run in two folders leaves the same committed bytes (divergence D16-7, D16-9).

Committed artifacts name files relative to the repository root and digests hash those relative
names, so `.premath/` committed from two machines (or two checkouts) does not differ by path.
"""

import subprocess
from datetime import UTC, datetime
from pathlib import Path

from premath.clock import FrozenClock
from premath.harness.worker import run_worker
from premath.issues.memory import add_issue
from premath.store.gitignore import GITIGNORE_BYTES
from tests.harness.loop_support import make_issues, worker_config
from tests.support import optional_tools

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DESCRIPTION = "Acceptance:\n- done\n\nVerification: `sh -c {check!r}`"


def _one_run(root: Path) -> dict[str, bytes]:
    """Two issues (one passes, one fails), one worker, a frozen clock; the files git would add."""
    git = optional_tools.require(optional_tools.git())
    root.mkdir(parents=True)
    subprocess.run([git, "init", "-q", str(root)], check=True)
    issues = str(root / ".premath" / "issues.jsonl")
    for issue_id, check in (("bd-1", "true"), ("bd-2", "false")):
        add_issue(
            issues,
            f"task {issue_id}",
            issue_id=issue_id,
            description=DESCRIPTION.format(check=check),
            now=T0,
            timeout_s=5,
        )
    cfg = worker_config(root, "w1", verify_cmd=None)
    run_worker(cfg, max_steps=2, continue_on_failure=True, clock=FrozenClock(T0))
    listed = subprocess.run(
        [git, "ls-files", "--others", "--exclude-standard", "-z"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    return {name.decode(): (root / name.decode()).read_bytes() for name in listed if name}


def test_the_same_run_in_two_folders_commits_the_same_bytes(tmp_path):
    first = _one_run(tmp_path / "a")
    second = _one_run(tmp_path / "somewhere" / "much" / "deeper" / "b")
    assert sorted(first) == sorted(second)
    assert {name: data for name, data in first.items() if second[name] != data} == {}
    committed = sorted(first)
    assert ".premath/.gitignore" in committed
    assert ".premath/harness_trajectory.jsonl" in committed
    assert sum(name.startswith(".premath/join-witnesses/") for name in committed) == 2
    assert not any(name.startswith(".premath/harness_steps/") for name in committed)
    for name, data in first.items():
        assert str(tmp_path).encode() not in data, name
    assert first[".premath/.gitignore"] == GITIGNORE_BYTES


def test_an_existing_gitignore_is_left_alone(tmp_path):
    premath = tmp_path / ".premath"
    premath.mkdir()
    (premath / ".gitignore").write_text("mine\n")
    make_issues(tmp_path, ["bd-1"])
    cfg = worker_config(tmp_path, "w1")
    run_worker(cfg, max_steps=1, continue_on_failure=True, clock=FrozenClock(T0))
    assert (premath / ".gitignore").read_text() == "mine\n"
