#!/usr/bin/env bash
# One-command local smoke run: the sample task, the scripted sample harness, the example deny
# policy, on this machine or (--docker) in a container. Prints premath's completion line, then
# validates the trajectory. Exit status: premath's (0 only when the run succeeded and its
# trajectory is valid ATIF).
#
#   tools/terminal-bench/scripts/run-local.sh            # run dir under tools/terminal-bench/runs/
#   tools/terminal-bench/scripts/run-local.sh --docker   # harness and tool calls in a container
#   BENCH_RUNS_DIR=/tmp/runs PYTHON=.venv/bin/python tools/terminal-bench/scripts/run-local.sh
#
# --docker needs a Docker engine and the base image (`mise run docker-setup`); the harness image
# (BENCH_HARNESS_IMAGE, default premath-runtime:local: this checkout's premath on the base image)
# is built when missing.
set -euo pipefail
docker_mode=false
if [[ "${1:-}" == "--docker" ]]; then
  docker_mode=true
fi

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

harness_command="$python $here/sample/harness.py"
sandbox=(--sandbox-backend local)
if $docker_mode; then
  image="${BENCH_HARNESS_IMAGE:-premath-runtime:local}"
  if ! docker image inspect "$image" >/dev/null 2>&1; then
    "$here/../docker/build-premath-image.sh" "$image"
  fi
  mkdir "$workspace/.harness"
  cp "$here/sample/harness.py" "$workspace/.harness/harness.py"
  harness_command="python3 $workspace/.harness/harness.py"
  sandbox=(--sandbox-backend docker --harness-image "$image")
fi

set +e
"$python" -m premath bench run \
  --task "$here/sample/task.json" \
  --command "$harness_command" \
  --policy "${BENCH_POLICY:-$here/configs/deny.example.json}" \
  --cwd "$workspace" \
  --run-dir "$run_dir" \
  --timeout "${BENCH_TIMEOUT:-120}" \
  --model-provider "${MODEL_PROVIDER:-none}" \
  --model-name "${MODEL_NAME:-scripted}" \
  "${sandbox[@]}"
status=$?
set -e

if [[ -f "$run_dir/atif/trajectory.json" ]]; then
  PYTHON="$python" "$here/scripts/validate-atif.sh" "$run_dir/atif/trajectory.json"
fi
exit "$status"
