"""Benchmark mode never leaks into normal commands: nothing of it loads, nothing is written."""

import subprocess
import sys

from premath.cli import COMMAND_GROUPS

PROBE = """
import sys
from premath.cli import cli
try:
    cli.main(sys.argv[1:])
except SystemExit as done:
    code = done.code
benchmark = ("premath.runner.bench", "premath.cli.bench", "premath.runner.atif",
             "premath.models.atif", "premath.cli.atif")
loaded = sorted(m for m in sys.modules if m.startswith(benchmark))
sys.stderr.write(f"exit={code} loaded={loaded}\\n")
"""


def probe(*args, cwd):
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.stderr.strip().splitlines()[-1]


def test_groups_are_registered_alongside_the_others():
    assert COMMAND_GROUPS["atif"].target == "premath.cli.atif:atif"
    assert COMMAND_GROUPS["bench"].target == "premath.cli.bench:bench"
    assert {"harness-session", "harness-feature", "harness-trajectory"} <= set(COMMAND_GROUPS)


def test_a_normal_command_loads_no_benchmark_code_and_writes_no_run(tmp_path):
    line = probe("harness-session", "write", "--state", "active", "--json", cwd=tmp_path)
    assert line == "exit=0 loaded=[]"
    assert not (tmp_path / ".premath" / "bench").exists()


def test_help_lists_bench_without_running_anything(cli_run, workdir):
    result = cli_run("bench")
    assert result.exit_code == 2  # click's no-args help: a usage answer, nothing run
    assert "run     Run one task unattended" in result.stdout + result.stderr
    assert list(workdir.iterdir()) == []
