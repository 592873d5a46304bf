#!/bin/bash
# Runs from the working folder (/app). The reward path is written relative to this script
# (/tests/../logs/verifier), which is /logs/verifier in a container and in the test-only
# host-process environment alike.
reward="$(dirname "$0")/../logs/verifier/reward.txt"
if [ "$(cat hello.txt 2>/dev/null)" = "hello" ]; then
    echo 1 > "$reward"
else
    echo 0 > "$reward"
fi
