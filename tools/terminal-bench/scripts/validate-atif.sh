#!/usr/bin/env bash
# Validate ATIF trajectory files with premath's validator (Harbor 0.26.0's rules) and, where a
# Harbor interpreter is available, with Harbor's own; fail when a file is invalid or when the
# two verdicts disagree on it.
#
#   tools/terminal-bench/scripts/validate-atif.sh jobs/*/*/agent/trajectory.json
#
# PYTHON runs premath (default python3). Harbor's interpreter: HARBOR_PYTHON, else PYTHON when it
# imports harbor, else the repository's .venv-harbor/bin/python; ALSO_HARBOR=1 makes its absence
# an error.
set -euo pipefail

if [[ $# -eq 0 ]]; then
  echo "usage: $0 TRAJECTORY.json..." >&2
  exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
python="${PYTHON:-python3}"

imports_harbor() { "$1" -c "import harbor.utils.trajectory_validator" >/dev/null 2>&1; }
harbor_python="${HARBOR_PYTHON:-}"
if [[ -z "$harbor_python" ]]; then
  if imports_harbor "$python"; then
    harbor_python="$python"
  elif [[ -x "$here/.venv-harbor/bin/python" ]] && imports_harbor "$here/.venv-harbor/bin/python"; then
    harbor_python="$here/.venv-harbor/bin/python"
  elif [[ "${ALSO_HARBOR:-0}" == "1" ]]; then
    echo "error: ALSO_HARBOR=1 but no Harbor interpreter found (set HARBOR_PYTHON, or pip install harbor on Python >= 3.12)" >&2
    exit 1
  fi
fi

status=0
for file in "$@"; do
  set +e
  "$python" -m premath atif validate "$file"
  ours=$?
  set -e
  if [[ $ours -gt 1 ]]; then
    exit "$ours"
  fi
  [[ $ours -eq 0 ]] || status=1
  if [[ -n "$harbor_python" ]]; then
    set +e
    "$harbor_python" -m harbor.utils.trajectory_validator "$file" >/dev/null 2>&1
    theirs=$?
    set -e
    verdict() { [[ $1 -eq 0 ]] && echo valid || echo invalid; }
    if [[ $(verdict "$ours") != $(verdict "$theirs") ]]; then
      echo "error: verdicts disagree on $file: premath says $(verdict "$ours"), Harbor says $(verdict "$theirs")" >&2
      status=1
    fi
  fi
done
exit "$status"
