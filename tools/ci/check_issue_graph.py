#!/usr/bin/env python3
"""The issue-graph CI check: the reference's `python3 tools/ci/check_issue_graph.py`, over
`premath issue check --compactness` (the contract checks, then redundant `blocks` edges).

Flags are the reference's: `--repo-root` (default: this repository), `--issues` (relative to
it, default `.premath/issues.jsonl`), `--note-warn-threshold` (default 2000; negative fails,
exit 1). Exit 0 when the graph passes both checks, 1 otherwise.
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from premath_command import REPO_ROOT, exec_premath


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Run core issue-graph checks through `premath issue check`."
    )
    parser.add_argument("--repo-root", type=Path, default=REPO_ROOT, help="Repository root")
    parser.add_argument(
        "--issues",
        type=Path,
        default=Path(".premath/issues.jsonl"),
        help="Issue graph JSONL path relative to --repo-root",
    )
    parser.add_argument("--note-warn-threshold", type=int, default=2000)
    args = parser.parse_args()
    if args.note_warn_threshold < 0:
        sys.stdout.write("[issue-graph] FAIL (invalid --note-warn-threshold: must be >= 0)\n")
        raise SystemExit(1)
    root = args.repo_root.resolve()
    issues = (root / args.issues).resolve()
    threshold = str(args.note_warn_threshold)
    command = ["issue", "check", "--issues", str(issues), "--note-warn-threshold", threshold]
    exec_premath([*command, "--compactness"], cwd=root)


if __name__ == "__main__":
    main()
