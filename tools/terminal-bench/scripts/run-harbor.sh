#!/usr/bin/env bash
# Terminal-Bench 2.0 through Harbor, with premath as an installed agent in each task container.
# Needs: Docker running, `pip install 'harbor==0.26.*'` (Python >= 3.12), the model's API key
# exported, and premath wheels (see README.md). Settings come from configs/benchmark.example.env
# or the file named by BENCH_ENV_FILE; extra arguments go to `harbor run` (e.g. -t TASK).
#
#   BENCH_ENV_FILE=tools/terminal-bench/configs/benchmark.env tools/terminal-bench/scripts/run-harbor.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck disable=SC1090
source "${BENCH_ENV_FILE:-$here/configs/benchmark.example.env}"
export PYTHONPATH="$here/adapters${PYTHONPATH:+:$PYTHONPATH}"

harbor run \
  -d "${DATASET:-terminal-bench@2.0}" \
  --agent premath_agent:PremathAgent \
  -m "${MODEL:?set MODEL=provider/name in the env file}" \
  -n "${N_CONCURRENT:-4}" \
  -k "${N_ATTEMPTS:-1}" \
  -o "${JOBS_DIR:-jobs}" \
  --ak "premath_wheel=${PREMATH_WHEEL:?build them: python -m pip wheel . -w dist/wheels}" \
  --ak "harness_command=${HARNESS_COMMAND:-}" \
  --ak "harness_install=${HARNESS_INSTALL:-}" \
  --ak "pass_env=${PASS_ENV:-}" \
  --ak "policy=${BENCH_POLICY:-$here/configs/deny.example.json}" \
  --ak "timeout_s=${AGENT_TIMEOUT_S:-840}" \
  --ak "atif_schema_version=${ATIF_SCHEMA_VERSION:-ATIF-v1.8}" \
  "$@"
