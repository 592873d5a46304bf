#!/usr/bin/env bash
# One-command local smoke run: the sample task, the scripted sample harness, the example deny
# policy, the local executor. Prints premath's completion line, then validates the trajectory.
# Exit status: premath's (0 only when the run succeeded and its trajectory is valid ATIF).
#
#   tools/terminal-bench/scripts/run-local.sh            # run dir under tools/terminal-bench/runs/
#   BENCH_RUNS_DIR=/tmp/runs PYTHON=.venv/bin/python tools/terminal-bench/scripts/run-local.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -n "${BENCH_ENV_FILE:-}" ]]; then
  # shellcheck disable=SC1090
  source "$BENCH_ENV_FILE"
fi
python="${PYTHON:-python3}"
runs_dir="${BENCH_RUNS_DIR:-$here/runs}"
run_dir="$runs_dir/local-$(date -u +%Y%m%dT%H%M%SZ)-$$"
workspace="$(mktemp -d "${TMPDIR:-/tmp}/premath-bench-workspace.XXXXXX")"
trap 'rm -rf "$workspace"' EXIT

set +e
"$python" -m premath bench run \
  --task "$here/sample/task.json" \
  --command "$python $here/sample/harness.py" \
  --policy "${BENCH_POLICY:-$here/configs/deny.example.json}" \
  --cwd "$workspace" \
  --run-dir "$run_dir" \
  --timeout "${BENCH_TIMEOUT:-120}" \
  --model-provider "${MODEL_PROVIDER:-none}" \
  --model-name "${MODEL_NAME:-scripted}" \
  --sandbox-backend local
status=$?
set -e

if [[ -f "$run_dir/atif/trajectory.json" ]]; then
  PYTHON="$python" "$here/scripts/validate-atif.sh" "$run_dir/atif/trajectory.json"
fi
exit "$status"
