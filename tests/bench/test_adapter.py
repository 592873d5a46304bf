"""The Harbor adapter imports without Harbor, and builds the commands Harbor will run."""

import asyncio
import importlib.util
import json
import shlex
import subprocess
import sys

import pytest

from tests.bench.conftest import SAMPLE_HARNESS, TERMINAL_BENCH

ADAPTER = TERMINAL_BENCH / "adapters" / "premath_agent.py"


@pytest.fixture(scope="module")
def adapter():
    spec = importlib.util.spec_from_file_location("premath_agent", ADAPTER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_imports_without_harbor(adapter):
    if importlib.util.find_spec("harbor") is None:
        assert adapter.HARBOR_AVAILABLE is False
    assert adapter.PremathAgent.name() == "premath"


def test_import_path_loads_like_harbor_does():
    """Harbor does importlib.import_module('premath_agent') with adapters/ on sys.path."""
    code = "import premath_agent; print(premath_agent.PremathAgent.__name__)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=TERMINAL_BENCH / "adapters",
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, "PremathAgent\n"), done.stderr


def test_run_command(adapter):
    line = adapter.run_command(
        "Fix the bug in 'main.py'; then run tests",
        harness_command="my-agent --headless",
        model_name="anthropic/claude-x",
        policy_path="/installed-agent/policy.json",
        pass_env=["ANTHROPIC_API_KEY"],
        task_id="fix-bug",
        timeout_s=900.0,
    )
    head, _, tail = line.partition("; mkdir -p /logs/agent/premath-runs; ")
    assert head == 'run_dir="/logs/agent/premath-runs/$(date -u +%Y%m%dT%H%M%SZ)-$$"'
    premath_line, _, after = tail.partition("; status=$?; ")
    argv = shlex.split(premath_line.replace('"$run_dir"', "RUN"))
    assert argv == [
        "/opt/premath/bin/premath",
        "bench",
        "run",
        "--instruction",
        "Fix the bug in 'main.py'; then run tests",
        "--command",
        "my-agent --headless",
        "--run-dir",
        "RUN",
        "--dataset-id",
        "terminal-bench@2.0",
        "--sandbox-backend",
        "harbor-task-container",
        "--json",
        "--task-id",
        "fix-bug",
        "--policy",
        "/installed-agent/policy.json",
        "--timeout",
        "900",
        "--model-name",
        "claude-x",
        "--model-provider",
        "anthropic",
        "--pass-env",
        "ANTHROPIC_API_KEY",
    ]
    assert after == (
        'cp "$run_dir/atif/trajectory.json" /logs/agent/trajectory.json 2>/dev/null || true; '
        'exit "$status"'
    )


def test_run_command_is_valid_shell_that_keeps_the_exit_status(adapter, tmp_path):
    """Run the line in a real shell, with a stub premath that fails after writing artifacts."""
    line = adapter.run_command(
        "x", harness_command="h", model_name=None, policy_path=None, pass_env=[]
    )
    stub = tmp_path / "premath"
    stub.write_text(
        '#!/bin/sh\nwhile [ "$1" != --run-dir ]; do shift; done\n'
        'mkdir -p "$2/atif" && echo "{}" > "$2/atif/trajectory.json"; exit 1\n'
    )
    stub.chmod(0o755)
    logs = tmp_path / "logs"
    line = line.replace("/opt/premath/bin/premath", str(stub)).replace("/logs/agent", str(logs))
    done = subprocess.run(["sh", "-c", line], capture_output=True, check=False)
    assert done.returncode == 1
    assert (logs / "trajectory.json").read_text() == "{}\n"


def test_install_command(adapter):
    line = adapter.install_command("/installed-agent/wheels/premath-0.1.0-py3-none-any.whl")
    assert "python3 -m venv /opt/premath" in line
    assert line.endswith(
        "/opt/premath/bin/python -m pip install --quiet "
        "/installed-agent/wheels/premath-0.1.0-py3-none-any.whl && "
        "/opt/premath/bin/premath --version"
    )


class FakeEnvironment:
    def __init__(self):
        self.commands, self.uploads = [], []

    async def exec(self, command, **kwargs):
        self.commands.append(command)

    async def upload_file(self, source, target):
        self.uploads.append((str(source), target))


def test_agent_install_and_run(adapter, tmp_path):
    agent = adapter.PremathAgent(
        logs_dir=tmp_path,
        model_name="openai/gpt-x",
        premath_wheel="dist/premath.whl",
        pass_env="A_KEY, B_KEY",
        policy="configs/deny.json",
    )
    environment = FakeEnvironment()
    asyncio.run(agent.install(environment))
    assert environment.uploads == [
        ("dist/premath.whl", "/installed-agent/wheels/premath.whl"),
        (str(SAMPLE_HARNESS), "/installed-agent/sample_harness.py"),
        ("configs/deny.json", "/installed-agent/policy.json"),
    ]
    assert "pip install --quiet /installed-agent/wheels/premath.whl" in environment.commands[-1]
    asyncio.run(agent.run("do the task", environment, context=None))
    command = environment.commands[-1]
    assert "--command 'python3 /installed-agent/sample_harness.py'" in command
    assert "--pass-env A_KEY --pass-env B_KEY" in command
    assert "--policy /installed-agent/policy.json" in command


def test_populate_context_reads_the_newest_summary(adapter, tmp_path):
    for name, tokens in (("20260101T000000Z-1", 5), ("20260102T000000Z-1", 7)):
        run = tmp_path / "premath-runs" / name
        run.mkdir(parents=True)
        usage = {
            "prompt_tokens": tokens,
            "completion_tokens": 2,
            "cached_tokens": 0,
            "cost_usd": 0.5,
        }
        (run / "summary.json").write_text(json.dumps({"usage": usage}))

    class Context:
        pass

    context = Context()
    adapter.PremathAgent(logs_dir=tmp_path).populate_context_post_run(context)
    assert (context.n_input_tokens, context.n_output_tokens, context.cost_usd) == (7, 2, 0.5)
