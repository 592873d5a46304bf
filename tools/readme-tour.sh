#!/usr/bin/env bash
# The README's tour, top to bottom, in an empty folder: every command must succeed, and the
# tour's own record must agree with itself at the end (the KPI's failed rows are the rows
# `harness-trajectory query --mode failed` lists). tests/test_readme_tour.py keeps the commands
# between the two `# ===` lines and the README's tour blocks in sync (same commands, same
# order), and runs this script in an 80-column terminal: no line it prints is wider, but the
# JSON documents the tour asks for (`--json`, `premath schema`).
#
#   tools/readme-tour.sh         # in a temporary folder, removed at the end
#   tools/readme-tour.sh DIR     # in DIR (made if missing), kept to look at afterwards
#
# Uses `premath` from PATH (e.g. the project's .venv). Each command is shown before it runs as
# `+ tour: COMMAND` (as bash reads it: a $'...' string shows its lines), folded to the
# terminal's width.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ $# -gt 0 ]]; then
    tour="$1"
    mkdir -p "$tour"
    trap 'kill $(jobs -p) 2>/dev/null || true' EXIT  # no server outlives the tour
else
    tour="$(mktemp -d "${TMPDIR:-/tmp}/premath-tour.XXXXXX")"
    trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tour"' EXIT
fi
cp -r "$repo/examples" "$repo/tools" "$tour/"
cd "$tour"
columns="$( (stty size </dev/tty) 2>/dev/null | cut -d' ' -f2 || true)"
columns="${columns:-80}"
show() {  # `+ tour: ` and the command; a longer one goes on in lines that start with `+`
    printf '%s\n' "$1" | fold -s -w "$((columns - 8))" |
        sed -e '1s/^/+ tour: /' -e '1!s/^/+       /'
}
trap '[[ $BASH_COMMAND == "trap - DEBUG" ]] || show "$BASH_COMMAND"' DEBUG

# === the README's tour ===
# Harness artifacts
premath harness-session write --state active --issue-id bd-7 --summary "start" --json
premath harness-session bootstrap --json
premath harness-feature write --feature-id feat.a --status in_progress --issue-id bd-7
premath harness-feature next --json
premath harness-feature write --feature-id feat.a --status completed --issue-id bd-7 --verification-ref 'test://feat.a'
premath harness-feature check --require-closure
premath harness-trajectory append --step-id s1 --action run.check --result-class completed
premath harness-trajectory query --mode failed --limit 20 --json

# Issue memory
premath issue add "Fix parser" --description $'Acceptance:\n- parses\nVerification: `python3 parser.py`'
premath issue add "Document parser" --description $'Acceptance:\n- documented\nVerification: `sh -c "test -s NOTES.md"`'
premath dep add bd-2 bd-1 --type blocks
premath issue ready --json
premath issue show bd-1
premath issue claim-next --assignee w1 --json
premath issue lease-renew bd-1 --assignee w1 --lease-id lease1_bd-1_w1 --json
PREMATH_WORKER_ID=w1 premath issue update bd-1 --status closed
premath issue check
premath dep diagnostics --graph-scope full --json

# The harness loop
premath harness boot --json
premath harness step --worker-id me --work-cmd 'echo notes > NOTES.md' --json
premath harness stop --worker-id me --json
premath issue add "Tidy up" --description $'Acceptance:\n- tidy\nVerification: `sh -c true`'
premath harness-loop worker --worker-id w1 --max-steps 5 --work-cmd 'true'
premath issue add "Tidy more" --description $'Acceptance:\n- tidy\nVerification: `sh -c true`'
premath harness-loop coordinator --worktree . --rounds 10 --work-cmd 'true'
premath harness-kpi --json
premath harness-policy decide --failure-class gate_timeout --attempt 2 --json

# Watching the work
premath observe-build --json
premath observe --mode needs_attention --json
premath observe-serve --live &
premath issue add "Watch me" --description $'Acceptance:\n- seen\nVerification: `sh -c true`'
premath harness-loop coordinator --worktree . --rounds 2 --work-cmd 'sleep 1'
kill $!

# Harness runs and experiments
echo '{"id": "t1", "a": 2, "b": 3, "op": "+", "expected": 5}' > task.json
premath run --command "python3 examples/clean_harness/harness.py" --arg --strategy --arg careful task.json
premath experiment validate examples/clean_harness/experiment.yaml
premath experiment run examples/clean_harness/experiment.yaml --run-id demo --concurrency 4
premath experiment run examples/clean_harness/experiment.yaml --run-id gate --fail-on-error-rate 0.1
premath experiment resume demo --rerun-errors
premath experiment report demo --html demo.html
premath schema experiment

# Headless benchmark runs
premath bench run --task tools/terminal-bench/sample/task.json --command "python3 tools/terminal-bench/sample/harness.py" --policy tools/terminal-bench/configs/deny.example.json --run-dir bench-run --json
premath atif validate bench-run/atif/trajectory.json
premath atif export bench-run --out trajectory.json
# === end of the tour ===
trap - DEBUG

# The tour's record agrees with itself: the KPI counts as failed exactly the rows the
# trajectory's failed query lists (specs/kpi.md).
count() { python3 -c "import json, sys; print(json.load(sys.stdin)$1)"; }
kpi_failed="$(premath harness-kpi --json | count '["counts"]["failedRows"]')"
query_failed="$(premath harness-trajectory query --mode failed --limit 0 --json | count '["failedCount"]')"
echo "tour: failed steps: KPI $kpi_failed, trajectory $query_failed"
[[ "$kpi_failed" == "$query_failed" ]]
