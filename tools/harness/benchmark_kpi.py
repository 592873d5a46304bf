#!/usr/bin/env python3
"""The multithread throughput KPI (`premath.multithread.throughput.v1`): the reference's
`python3 tools/harness/benchmark_kpi.py [--json]`, over `premath harness-kpi`.

Flags are the reference's (`--trajectory-path`, `--session-path`, `--issues-path`,
`--window-hours`, `--target-kpi`, `--rollback-kpi`, `--min-sample-rows`, `--json`); relative
paths resolve against this repository's root, as the reference's script resolves them.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from premath_command import REPO_ROOT, exec_premath

if __name__ == "__main__":
    exec_premath(["harness-kpi", *sys.argv[1:]], cwd=REPO_ROOT)
