"""The shell lines the Harbor adapter runs, checked in real shells on any Python.

The adapter class itself is tested against the real Harbor in tests/harbor/ (Python >= 3.12);
these builders have no Harbor import, so they are checked here too.
"""

import importlib.util
import shlex
import subprocess
import sys

import pytest

from tests.bench.conftest import TERMINAL_BENCH

COMMANDS = TERMINAL_BENCH / "adapters" / "premath_commands.py"


@pytest.fixture(scope="module")
def commands():
    spec = importlib.util.spec_from_file_location("premath_commands", COMMANDS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def line_for(commands, **overrides):
    options = {
        "harness_command": "my-agent --headless",
        "model_name": "anthropic/claude-x",
        "policy_path": "/installed-agent/premath/policy.json",
        "pass_env": ["ANTHROPIC_API_KEY"],
        "dataset_id": "terminal-bench@2.0",
        "task_id": "fix-bug",
        "session_id": "fix-bug__abc__agent",
        "timeout_s": 840.0,
        "atif_schema_version": "ATIF-v1.8",
        **overrides,
    }
    return commands.run_command("Fix the bug in 'main.py'; then run tests", **options)


def test_run_command(commands):
    head, _, premath_line = line_for(commands).partition("; mkdir -p /logs/agent/premath-runs; ")
    assert head == 'run_dir="/logs/agent/premath-runs/$(date -u +%Y%m%dT%H%M%SZ)-$$"'
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
        "--sandbox-backend",
        "harbor-task-container",
        "--timeout",
        "840",
        "--atif-schema-version",
        "ATIF-v1.8",
        "--live-trajectory",
        "/logs/agent/trajectory.json",
        "--json",
        "--dataset-id",
        "terminal-bench@2.0",
        "--task-id",
        "fix-bug",
        "--session-id",
        "fix-bug__abc__agent",
        "--policy",
        "/installed-agent/premath/policy.json",
        "--model-name",
        "claude-x",
        "--model-provider",
        "anthropic",
        "--pass-env",
        "ANTHROPIC_API_KEY",
    ]


def test_run_command_keeps_premaths_exit_status(commands, tmp_path):
    """Run the line in a real shell, with a stub premath that fails after writing artifacts."""
    stub = tmp_path / "premath"
    stub.write_text(
        '#!/bin/sh\nwhile [ "$1" != --run-dir ]; do shift; done\n'
        'mkdir -p "$2/atif" && echo "{}" > "$2/atif/trajectory.json"; exit 1\n'
    )
    stub.chmod(0o755)
    logs = tmp_path / "logs"
    line = line_for(commands, model_name=None, policy_path=None, pass_env=[])
    line = line.replace("/opt/premath/bin/premath", str(stub)).replace("/logs/agent", str(logs))
    done = subprocess.run(["sh", "-c", line], capture_output=True, check=False)
    assert done.returncode == 1
    (run,) = (logs / "premath-runs").iterdir()
    assert (run / "atif" / "trajectory.json").read_text() == "{}\n"


def run_install(commands, tmp_path, tools: dict[str, str]):
    """The install line in a shell whose PATH holds only `tools` (name -> script)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, script in tools.items():
        (bin_dir / name).write_text(script)
        (bin_dir / name).chmod(0o755)
    line = commands.install_command(["--no-index", "--find-links", "/w", "premath"])
    line = line.replace("/opt/premath", str(tmp_path / "venv"))
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path)}
    return subprocess.run(["/bin/sh", "-c", line], capture_output=True, text=True, env=env)


def test_install_without_python_or_uv_names_the_requirement(commands, tmp_path):
    done = run_install(commands, tmp_path, {"python3": "#!/bin/sh\nexit 1\n"})
    assert done.returncode == 1
    assert done.stderr.strip() == commands.NO_PYTHON_MESSAGE


def test_install_uses_uv_for_a_managed_python(commands, tmp_path):
    log = tmp_path / "uv.log"
    uv = f'#!/bin/sh\necho "$UV_PYTHON_INSTALL_DIR: $*" >> {log}\n'
    premath = "#!/bin/sh\necho premath 0.1.0\n"
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "premath").write_text(premath)
    (venv_bin / "premath").chmod(0o755)
    done = run_install(commands, tmp_path, {"python3": "#!/bin/sh\nexit 1\n", "uv": uv})
    assert (done.returncode, done.stdout) == (0, "premath 0.1.0\n"), done.stderr
    venv = tmp_path / "venv"
    assert log.read_text().splitlines() == [
        # (this test's stand-in for /opt is tmp_path: /opt/premath-python is {venv}-python)
        f"{venv}-python: venv --quiet --python 3.12 {venv}",
        f"{venv}-python: pip install --quiet --python {venv}/bin/python "
        "--no-index --find-links /w premath",
    ]


def test_install_uses_the_images_python_when_new_enough(commands, tmp_path):
    line = commands.install_command(["--no-index", "pip"])  # already there: nothing to fetch
    line = line.replace("/opt/premath", str(tmp_path / "venv"))
    line = line.replace(f"{tmp_path}/venv/bin/premath --version", "true")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run(["/bin/sh", "-c", line], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "venv" / "bin" / "python").exists()
