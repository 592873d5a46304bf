"""Real processes on one store: 16 claimers, exact accounting; SIGKILLed claimers, no torn store.

Claimer processes loop over `premath.issues.memory.claim_next` in-process (1,000 interpreter
start-ups would dominate the run); a few real `python -m premath issue claim-next` processes
claim at the same time, so the CLI path takes part in the race too.
"""

import os
import random
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from premath.store.issues_file import load_issues
from tests.cli.test_issue import row

pytestmark = pytest.mark.slow

CLAIMER = """
import sys, time
from pathlib import Path
from premath.clock import SystemClock
from premath.issues.memory import claim_next
path, worker, go = sys.argv[1], sys.argv[2], Path(sys.argv[3])
while not go.exists():
    time.sleep(0.001)
while True:
    row = claim_next(path, worker, now=SystemClock().now(), timeout_s=120)
    if row is None:
        break
    print(row["id"], flush=True)
"""
CLI_CLAIMS = 3


def seed_store(path: Path, count: int) -> None:
    """The store in the order every rewrite keeps (by id), so a round in which the kill lands
    before any claim leaves it exactly as a round with claims would: sorted and whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    ids = sorted(f"bd-{n}" for n in range(1, count + 1))
    path.write_bytes(b"".join(orjson.dumps(row(issue_id)) + b"\n" for issue_id in ids))


def start_claimer(path: Path, worker: str, go: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", CLAIMER, str(path), worker, str(go)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def cli_claims(path: Path, worker: str, go: Path) -> list[bytes]:
    """A few claims through the real CLI, started once the race is on."""
    while not go.exists():
        time.sleep(0.001)
    outputs = []
    for _ in range(CLI_CLAIMS):
        proc = subprocess.run(
            [sys.executable, "-m", "premath", "issue", "claim-next", "--assignee", worker,
             "--issues", str(path), "--json"],
            capture_output=True,
            check=False,
            env={**os.environ, "PREMATH_LOCK_TIMEOUT_SECONDS": "120"},
        )  # fmt: skip
        assert (proc.returncode, proc.stderr) == (0, b""), proc.stderr
        outputs.append(proc.stdout)
    return outputs


def test_sixteen_claimers_take_each_of_a_thousand_issues_once(tmp_path):
    store = tmp_path / ".premath" / "issues.jsonl"
    seed_store(store, 1000)
    go = tmp_path / "go"
    claimers = {f"w{n}": start_claimer(store, f"w{n}", go) for n in range(16)}
    go.touch()
    cli_documents = [orjson.loads(out) for out in cli_claims(store, "cli", go)]
    claimed: dict[str, str] = {}
    for worker, proc in claimers.items():
        out, err = proc.communicate(timeout=240)
        assert (proc.returncode, err) == (0, b""), err.decode()
        for issue_id in out.decode().split():
            assert issue_id not in claimed, f"{issue_id} claimed twice"
            claimed[issue_id] = worker
    for document in cli_documents:
        issue_id = document["issue"]["id"]
        assert issue_id not in claimed, f"{issue_id} claimed twice"
        claimed[issue_id] = "cli"
    assert len(claimed) == 1000
    assert len(set(claimed.values())) > 1
    final = load_issues(
        str(store), now=__import__("datetime").datetime.now(tz=__import__("datetime").UTC)
    )
    assert {issue_id: r["assignee"] for issue_id, r in final.items()} == claimed
    assert all(
        r["status"] == "in_progress" and r["lease"]["owner"] == r["assignee"]
        for r in final.values()
    )
    assert sorted(p.name for p in store.parent.iterdir()) == ["issues.jsonl"]


def test_killed_claimers_never_tear_the_store_and_their_lock_is_recovered(tmp_path):
    store = tmp_path / ".premath" / "issues.jsonl"
    seed_store(store, 400)
    go = tmp_path / "go"
    go.touch()
    rng = random.Random(1234)
    kills = 0
    for round_number in range(6):
        procs = [start_claimer(store, f"r{round_number}w{n}", go) for n in range(3)]
        time.sleep(rng.uniform(0.05, 0.4))
        for proc in procs:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        for proc in procs:
            proc.communicate(timeout=60)
        data = store.read_bytes()
        assert data.endswith(b"\n")
        rows = [orjson.loads(line) for line in data.splitlines()]
        assert [r["id"] for r in rows] == sorted(r["id"] for r in rows)
    finisher = start_claimer(store, "finisher", go)
    _, err = finisher.communicate(timeout=240)
    assert finisher.returncode == 0, err.decode()
    final = load_issues(str(store), now=datetime.now(UTC))
    assert len(final) == 400
    assert all(r["status"] == "in_progress" for r in final.values())
    assert not Path(f"{store}.lock").exists()
    assert kills == 18
    leftovers = sorted(p.name for p in store.parent.iterdir())
    assert leftovers == ["issues.jsonl"], leftovers


HOLDER = """
import sys, time
from premath.store.locks import hold_marker
with hold_marker(sys.argv[1], timeout_s=5):
    print("held", flush=True)
    time.sleep(60)
"""


def test_a_lock_held_by_a_killed_process_is_broken_by_the_next_claim(tmp_path):
    store = tmp_path / ".premath" / "issues.jsonl"
    seed_store(store, 2)
    lock = Path(f"{store}.lock")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert holder.stdout is not None
    assert holder.stdout.readline() == b"held\n"
    holder.send_signal(signal.SIGKILL)
    holder.communicate(timeout=60)
    assert lock.read_text().startswith(f"pid={holder.pid}\n")
    proc = subprocess.run(
        [sys.executable, "-m", "premath", "issue", "claim-next", "--assignee", "w",
         "--issues", str(store), "--json"],
        capture_output=True,
        check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f"removed stale lock {lock} left by process {holder.pid}".encode() in proc.stderr
    assert orjson.loads(proc.stdout)["issue"]["id"] == "bd-1"
    assert not lock.exists()
