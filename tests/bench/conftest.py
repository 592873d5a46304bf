"""Harness scripts and paths shared by the benchmark-run tests."""

import sys
import textwrap
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
TERMINAL_BENCH = REPO_ROOT / "tools" / "terminal-bench"
SAMPLE_HARNESS = TERMINAL_BENCH / "sample" / "harness.py"
SAMPLE_TASK = TERMINAL_BENCH / "sample" / "task.json"
EXAMPLE_POLICY = TERMINAL_BENCH / "configs" / "deny.example.json"

# Tiny harnesses for the failure modes: each is `python script TASK RESULT`.
HARNESSES = {
    "ok": 'open(sys.argv[2], "w").write(\'{"outcome": "success"}\')',
    "crash": 'sys.stderr.write("boom\\n"); sys.exit(3)',
    "no_result": "pass",
    "bad_result": 'open(sys.argv[2], "w").write("not json")',
    "reports_error": 'open(sys.argv[2], "w").write(\'{"outcome": "error"}\')',
    "sleeps": "import time; time.sleep(30)",
    "rows_file": """
        import json, os
        rows = [{"source": "agent", "message": "native 1", "metrics": {"prompt_tokens": 4}},
                {"source": "user", "message": "oops", "metrics": {"prompt_tokens": 1}},
                {"source": "agent", "message": "native 2",
                 "tool_calls": [{"tool_call_id": "n1", "function_name": "bash",
                                 "arguments": {"cmd": "ls"}}],
                 "results": [{"source_call_id": "n1", "content": "a"}]}]
        out = os.path.dirname(sys.argv[2])
        with open(os.path.join(out, "trajectory.jsonl"), "w") as handle:
            handle.write("\\n".join(json.dumps(row) for row in rows) + "\\nnot json\\n")
        open(sys.argv[2], "w").write('{"outcome": "success"}')
    """,
    "cached_tokens": """
        import json, subprocess
        task = json.load(open(sys.argv[1]))
        usage = {"prompt_tokens": 5, "cached_tokens": 2}
        row = {"source": "agent", "message": "hi", "metrics": usage}
        subprocess.run([*task["premath"]["record"], "--row", json.dumps(row)], check=True,
                       capture_output=True)
        open(sys.argv[2], "w").write('{"outcome": "success"}')
    """,
}


@pytest.fixture
def harness(tmp_path_factory):
    """`harness("crash")` -> the --command line running that tiny harness."""
    folder = tmp_path_factory.mktemp("harnesses")

    def command(name: str) -> str:
        script = folder / f"{name}.py"
        script.write_text("import sys\n" + textwrap.dedent(HARNESSES[name]), encoding="utf-8")
        return f"{sys.executable} {script}"

    return command


def sample_command() -> str:
    return f"{sys.executable} {SAMPLE_HARNESS}"
