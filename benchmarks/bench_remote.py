"""Remote workers: what a step costs more when its worker claims through the MCP server and
delivers a git branch, over a local worker on the issues file (issue 23's target: < 150 ms).

Both workers run the same in-process step on trivial work (`true` / `true`): the local one on a
store of its own; the remote one through `McpAuthority` to a real `mcp-serve --transport
streamable-http` on loopback (claim, the claimed issue, close, the lease snapshot: MCP round
trips), with a `GitDelivery` into a bare repository (fetch and reset of the worktree, commit,
branch check, push). Steps alternate local and remote, so both see the same machine noise; the
overhead is the difference of the medians. On a shared, loaded machine wall time mostly
measures the queue for a core, so the verdict is taken on CPU time (this process, every process
it started, git and the commands, and the server's own, read from /proc), with the wall time
beside it. A heartbeat renewal (`issue_lease_renew`, once per third of the lease TTL while a
command runs) is reported on its own: trivial work ends before the first one.
"""

import contextlib
import os
import resource
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from benchmarks._measure import Row, ms, verdict
from premath.clock import SystemClock
from premath.harness.delivery import GitDelivery
from premath.harness.loop_config import make_worker_config
from premath.harness.step import run_step
from premath.issues.memory import add_issue

CLOCK = SystemClock()
TARGET_S = 0.150


def _issues(path: Path, count: int) -> None:
    for n in range(1, count + 1):
        add_issue(str(path), f"task {n}", issue_id=f"bd-{n}", now=CLOCK.now(), timeout_s=10)


def _git(*args: str, cwd: Path) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b"}
    env |= {"GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def _cpu_s(server_pid: int | None = None) -> float:
    """CPU seconds used so far by this process, its reaped children and the server."""
    used = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        used += usage.ru_utime + usage.ru_stime
    if server_pid is not None:
        fields = Path(f"/proc/{server_pid}/stat").read_text().rsplit(")", 1)[1].split()
        used += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return used


@contextlib.contextmanager
def _server(root: Path, tokens: Path) -> Iterator[tuple[str, int]]:
    """`mcp-serve` over loopback HTTP on `root`; its URL and pid."""
    log = root.parent / "server.stderr"
    with log.open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "premath", "mcp-serve", "--transport", "streamable-http",
             "--bind", "127.0.0.1:0", "--token-file", str(tokens), "--mutation-policy", "open",
             "--access-log", str(root.parent / "access.log")],
            cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while "listening: " not in log.read_text():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"mcp-serve did not start: {log.read_text()}")
            time.sleep(0.05)
        yield log.read_text().split("listening: ", 1)[1].split()[0], process.pid
    finally:
        process.terminate()
        process.wait(timeout=60)


Timings = dict[str, list[float]]


def _steps(count: int) -> Timings:
    """Wall and CPU seconds of each local step and each remote step, and the wall seconds of
    each heartbeat renewal."""
    from premath.mcp.remote import McpAuthority

    with tempfile.TemporaryDirectory(prefix="premath-bench-remote-") as folder:
        base = Path(folder)
        local_root, project, remote = base / "local", base / "project", base / "remote.git"
        local_root.mkdir()
        _issues(local_root / ".premath" / "issues.jsonl", count + 1)
        _issues(project / ".premath" / "issues.jsonl", count + 1)
        (project / "README").write_text("bench\n")
        _git("init", "-q", "-b", "main", cwd=project)
        _git("add", "-A", cwd=project)
        _git("commit", "-qm", "init", cwd=project)
        _git("clone", "-q", "--bare", str(project), str(remote), cwd=base)
        tokens = base / "tokens"
        tokens.write_text(f"bench {secrets.token_urlsafe(32)}\n")
        tokens.chmod(0o600)
        token = tokens.read_text().split()[1]
        local = make_worker_config(
            worker_id="bench", repo_root=str(local_root), worktree=str(local_root),
            work_cmd="true", verify_cmd="true",
        )  # fmt: skip
        times: Timings = {name: [] for name in ("local", "remote", "local_cpu", "remote_cpu")}
        times["renew"] = []
        with _server(project, tokens) as (url, pid), McpAuthority(url, token) as memory:
            memory.connect()
            delivery = GitDelivery(str(remote), str(base / "home"), "bench")
            delivery.prepare()
            remote_cfg = make_worker_config(
                worker_id="bench", repo_root=delivery.home, worktree=delivery.worktree,
                work_cmd="true", verify_cmd="true", memory=memory, delivery=delivery,
            )  # fmt: skip
            for index in range(1, count + 1):
                cpu, start = _cpu_s(), time.perf_counter()
                run_step(local, index, CLOCK)
                times["local"].append(time.perf_counter() - start)
                times["local_cpu"].append(_cpu_s() - cpu)
                cpu, start = _cpu_s(pid), time.perf_counter()
                step = run_step(remote_cfg, index, CLOCK)
                times["remote"].append(time.perf_counter() - start)
                times["remote_cpu"].append(_cpu_s(pid) - cpu)
                if step is None or step.outcome != "completed":
                    raise RuntimeError(f"remote benchmark step {index} did not complete")
            claimed = memory.claim_next("bench", ttl_s=3600, now=CLOCK.now())
            assert claimed is not None
            assert claimed.lease_id is not None
            for _ in range(count):
                start = time.perf_counter()
                memory.renew(
                    claimed.issue_id, "bench", claimed.lease_id, ttl_s=3600, now=CLOCK.now()
                )
                times["renew"].append(time.perf_counter() - start)
        shutil.rmtree(base / "home", ignore_errors=True)
    return times


def rows(quick: bool) -> list[Row]:
    count = 6 if quick else 30
    times = _steps(count)
    # The first steps warm caches (the server's store, git's packs): medians of the rest.
    median = {name: statistics.median(values[1:]) for name, values in times.items()}
    cpu_overhead = median["remote_cpu"] - median["local_cpu"]
    wall_overhead = median["remote"] - median["local"]
    return [
        Row(
            measure="remote worker overhead per issue (claim, close, push over MCP + git), CPU",
            size=f"{count} issues, true/true",
            ours=f"{ms(median['remote_cpu'])} per step (+{ms(cpu_overhead)}; wall "
            f"{ms(median['remote'])}, +{ms(wall_overhead)})",
            baseline=f"{ms(median['local_cpu'])} per step (wall {ms(median['local'])}): local",
            ratio=f"{median['remote_cpu'] / median['local_cpu']:.2f}x",
            target=f"overhead < {ms(TARGET_S)}",
            verdict=verdict(cpu_overhead < TARGET_S),
        ),
        Row(
            measure="remote heartbeat (issue_lease_renew over MCP)",
            size=f"{count} renewals",
            ours=ms(median["renew"]),
            baseline="-",
            ratio="-",
            target="report",
            verdict="-",
        ),
    ]
