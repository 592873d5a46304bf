"""The merge queue's overhead per landed issue (specs/remote-workers.md "Merge queue"): what
landing a delivered branch costs on trivial work, beside what delivering it costs.

A worker's `GitDelivery` with its `MergeQueue`, against a bare repository on this machine: for
each issue the worktree is reset to the integration head, one file is written, the delivery
commits and pushes `premath/<issue>` (the baseline), then the queue fetches the integration
head, merges the branch in its clean checkout, runs the verification (`true`) there and pushes
the integration branch (ours). Wall time and CPU time (this process and every git it started)
are measured per issue; medians after the first issue (which warms git's caches).
"""

import os
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks._measure import Row, ms, verdict
from premath.harness.commands import CommandRun, run_command
from premath.harness.delivery import GitDelivery
from premath.harness.merge_queue import MergeQueue

TARGET_S = 0.250


def _cpu_s() -> float:
    used = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        used += usage.ru_utime + usage.ru_stime
    return used


def _git(*args: str, cwd: Path) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b"}
    env |= {"GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def _landings(count: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"deliver": [], "land": [], "deliver_cpu": [], "land_cpu": []}
    with tempfile.TemporaryDirectory(prefix="premath-bench-queue-") as folder:
        base = Path(folder)
        project, remote = base / "project", base / "remote.git"
        project.mkdir()
        (project / "README").write_text("bench\n")
        _git("init", "-q", "-b", "main", cwd=project)
        _git("add", "-A", cwd=project)
        _git("commit", "-qm", "init", cwd=project)
        _git("clone", "-q", "--bare", str(project), str(remote), cwd=base)
        delivery = GitDelivery(str(remote), str(base / "home"), "bench")
        delivery.prepare()
        queue = MergeQueue(delivery)
        queue.prepare(land=False)
        logs = str(base / "logs")

        def verify(cwd: str) -> CommandRun:
            return run_command(
                "verify", "true", cwd=cwd, env={"PATH": os.environ["PATH"]},
                timeout_s=60, output_cap=1 << 16, log_dir=logs,
            )  # fmt: skip

        for index in range(1, count + 1):
            delivery.reset()
            Path(delivery.worktree, f"out-{index}").write_text("done\n")
            cpu, start = _cpu_s(), time.perf_counter()
            delivered = delivery.deliver(f"bd-{index}", f"task {index}", f"s{index}", None)
            times["deliver"].append(time.perf_counter() - start)
            times["deliver_cpu"].append(_cpu_s() - cpu)
            assert delivered.commit is not None, delivered
            cpu, start = _cpu_s(), time.perf_counter()
            landing = queue.submit(delivered.branch, delivered.commit, verify, lambda _l: None)
            times["land"].append(time.perf_counter() - start)
            times["land_cpu"].append(_cpu_s() - cpu)
            assert landing.ok, landing
    return times


def rows(quick: bool) -> list[Row]:
    count = 6 if quick else 30
    times = _landings(count)
    median = {name: statistics.median(values[1:]) for name, values in times.items()}
    return [
        Row(
            measure="merge queue overhead per landed issue (merge, verify checkout, push), CPU",
            size=f"{count} issues, verify true",
            ours=f"{ms(median['land_cpu'])} per issue (wall {ms(median['land'])})",
            baseline=f"{ms(median['deliver_cpu'])} per issue (wall {ms(median['deliver'])}): "
            "the branch's own delivery",
            ratio=f"{median['land_cpu'] / median['deliver_cpu']:.2f}x",
            target=f"overhead < {ms(TARGET_S)}",
            verdict=verdict(median["land_cpu"] < TARGET_S),
        )
    ]
