#!/usr/bin/env bash
# Validate ATIF trajectory files with premath's in-repo validator (Harbor 0.26.0's rules).
# When Harbor is importable (or ALSO_HARBOR=1 demands it), each file is also checked by
# Harbor's own validator, and the two verdicts must agree.
#
#   tools/terminal-bench/scripts/validate-atif.sh jobs/*/*/agent/trajectory.json
set -euo pipefail

if [[ $# -eq 0 ]]; then
  echo "usage: $0 TRAJECTORY.json..." >&2
  exit 2
fi
python="${PYTHON:-python3}"

"$python" -m premath atif validate "$@"

if "$python" -c "import harbor.utils.trajectory_validator" 2>/dev/null; then
  for file in "$@"; do
    "$python" -m harbor.utils.trajectory_validator "$file"
  done
elif [[ "${ALSO_HARBOR:-0}" == "1" ]]; then
  echo "error: ALSO_HARBOR=1 but harbor is not installed (pip install harbor)" >&2
  exit 1
fi
