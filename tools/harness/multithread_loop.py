#!/usr/bin/env python3
"""The worker and coordinator loops: the reference's
`python3 tools/harness/multithread_loop.py worker|coordinator`, over
`premath harness-loop worker|coordinator`.

The flags are the reference's (issue-memory-and-loops.md §B1), with its environment fallbacks
(`PREMATH_WORKER_ID`, `PREMATH_WORKTREES`, `PREMATH_HOST_ACTION_TRANSPORT`, ...) and defaults:
`--repo-root` is this repository, memory paths are relative to it, `--host-action-transport`
is `mcp` unless the environment says `local`/`local-repl`. `--work-program` (premath's) runs a
host-action program as the work step. What the loops do, and print, is premath's
(specs/harness-loop.md; docs/divergences.md D5-*, D24-7).
"""

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from premath_command import REPO_ROOT, exec_premath

PATH_FLAGS = ("--issues-path", "--session-path", "--feature-ledger-path", "--trajectory-path")
PASSED = (
    "--lease-ttl-seconds",
    "--work-cmd",
    "--verify-cmd",
    "--witness-ref-prefix",
    "--mutation-mode",
    "--override-reason",
    "--host-action-transport",
    "--work-program",
)


def host_action_transport() -> str:
    value = os.environ.get("PREMATH_HOST_ACTION_TRANSPORT", "").strip()
    if value == "local":
        return "local-repl"
    return value if value in ("mcp", "local-repl") else "mcp"


def common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo-root", default=str(REPO_ROOT))
    parser.add_argument("--worktree-root", default=".")
    parser.add_argument("--issues-path", default=".premath/issues.jsonl")
    parser.add_argument("--session-path", default=".premath/harness_session.json")
    parser.add_argument("--feature-ledger-path", default=".premath/harness_feature_ledger.json")
    parser.add_argument("--trajectory-path", default=".premath/harness_trajectory.jsonl")
    parser.add_argument("--lease-ttl-seconds", type=int, default=3600)
    # PREMATH_WORK_CMD, PREMATH_VERIFY_CMD, PREMATH_WITNESS_REF_PREFIX: premath reads them.
    parser.add_argument("--work-cmd", default=None)
    parser.add_argument("--verify-cmd", default=None)
    parser.add_argument("--witness-ref-prefix", default=None)
    parser.add_argument("--mutation-mode", default="")
    parser.add_argument("--override-reason", default="")
    parser.add_argument(
        "--host-action-transport", choices=("mcp", "local-repl"), default=host_action_transport()
    )
    parser.add_argument("--work-program", default=None, help="premath: a host-action program")


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Harness multithread worker/coordinator loop")
    modes = parser.add_subparsers(dest="mode", required=True)
    worker = modes.add_parser("worker")
    common(worker)
    worker.add_argument("--worker-id", default=os.environ.get("PREMATH_WORKER_ID", ""))
    worker.add_argument("--max-steps", type=int, default=1)
    worker.add_argument("--continue-on-failure", action="store_true")
    coordinator = modes.add_parser("coordinator")
    common(coordinator)
    coordinator.add_argument("--worktree", action="append", default=[])
    coordinator.add_argument("--rounds", type=int, default=1)
    coordinator.add_argument("--worker-prefix", default="worker")
    coordinator.add_argument("--max-steps-per-worker", type=int, default=1)
    coordinator.add_argument("--continue-on-failure", action="store_true")
    return parser.parse_args(argv)


def premath_args(args: argparse.Namespace) -> list[str]:
    """`premath harness-loop <mode> ...` spelling the same settings."""
    out = ["harness-loop", args.mode, "--repo-root", args.repo_root]
    for flag in (*PATH_FLAGS, *PASSED):
        value = getattr(args, flag[2:].replace("-", "_"))
        if value not in (None, ""):
            out += [flag, str(value)]
    if args.mode == "worker":
        out += ["--worktree-root", args.worktree_root, "--worker-id", args.worker_id]
        out += ["--max-steps", str(args.max_steps)]
    else:
        worktrees = args.worktree or [
            part for part in os.environ.get("PREMATH_WORKTREES", "").split(",") if part.strip()
        ]
        for worktree in worktrees:
            out += ["--worktree", worktree]
        out += ["--rounds", str(args.rounds), "--worker-prefix", args.worker_prefix]
        out += ["--max-steps-per-worker", str(args.max_steps_per_worker)]
    if args.continue_on_failure:
        out.append("--continue-on-failure")
    return out


if __name__ == "__main__":
    exec_premath(premath_args(parse(sys.argv[1:])))
