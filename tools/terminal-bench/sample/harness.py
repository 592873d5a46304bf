#!/usr/bin/env python3
"""A scripted sample agent for smoke runs: no model, real tool calls through premath.

Contract (specs/bench-run.md "Harness contract"): `harness.py TASK.json RESULT.json`. The task's
`premath.tool` / `premath.record` argv prefixes call back into the live run: every command goes
through `premath bench tool` (deny rules apply there), every turn is recorded as a trajectory row.
It creates hello.txt, reads it back, tries one command the example policy denies, and reports
success. Standard library only, so it runs in any task container with python3.

Where: a task that names a `work_dir` (the local sample task does) is worked in that folder of
the run folder, so a local run never writes into the folder it was started from; a task without
one (a Terminal-Bench task in its container) is worked in the current folder, the task's own.
"""

import json
import os
import subprocess  # noqa: TID251 - a harness is a separate program, not premath code
import sys

HARNESS_VERSION = "sample-0.1.0"
MODEL = "scripted"


def record(task: dict, row: dict) -> None:
    row_json = json.dumps(row)  # noqa: TID251 - stdlib only: runs in any task container
    subprocess.run([*task["premath"]["record"], "--row", row_json], check=True)


def work_area(task: dict) -> str:
    """The folder the work happens in (see the module's doc); made when it is the run's."""
    name = task.get("work_dir")
    if not name:
        return os.getcwd()
    folder = os.path.join(task["premath"]["run_dir"], name)
    os.makedirs(folder, exist_ok=True)
    return folder


def tool(task: dict, argv: list[str], message: str | None = None) -> dict:
    options = ["--message", message] if message is not None else []
    done = subprocess.run(
        [*task["premath"]["tool"], *options, "--", *argv],
        capture_output=True,
        check=False,
        cwd=work_area(task),  # `bench tool` runs the command in its own working folder
    )
    return json.loads(done.stdout)


def turn(task: dict, message: str, prompt_tokens: int, completion_tokens: int) -> None:
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "cached_tokens": 0,
        "cost_usd": 0.0,
    }
    record(task, {"source": "agent", "message": message, "model_name": MODEL, "metrics": usage})


def main(task_path: str, result_path: str) -> int:
    with open(task_path, encoding="utf-8") as handle:
        task = json.load(handle)
    record(task, {"source": "system", "message": "You are a scripted shell agent."})
    turn(task, "I will create hello.txt and check it.", 120, 18)
    tool(task, ["sh", "-c", "printf 'hello\\n' > hello.txt"])
    listing = tool(task, ["ls", "-1"])
    turn(task, "Reading it back.", 160, 9)
    shown = tool(task, ["cat", "hello.txt"])
    cleanup = "Cleaning up (the policy may refuse)."
    refused = tool(task, ["rm", "-rf", "hello.txt"], message=cleanup)
    solved = "hello.txt" in listing.get("stdout", "") and shown.get("stdout") == "hello\n"
    final = "Done: hello.txt holds 'hello'." if solved else "Could not create hello.txt."
    turn(task, final, 90, 12)
    result = {
        "outcome": "success" if solved else "failure",
        "harness_version": HARNESS_VERSION,
        "metrics": {"cleanup_refused": "error" in refused},
    }
    with open(result_path, "w", encoding="utf-8") as handle:
        json.dump(result, handle)  # noqa: TID251 - stdlib only, as above
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
