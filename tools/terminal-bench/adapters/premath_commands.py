"""Shell lines the Harbor adapter runs in a task container: install premath, run one task.

Plain functions with no Harbor import, so premath's own test suite checks them on any Python;
`premath_agent.py` (Harbor's installed agent) is the only caller.
"""

import shlex

CONTAINER_LOGS_DIR = "/logs/agent"
CONTAINER_TRAJECTORY = f"{CONTAINER_LOGS_DIR}/trajectory.json"
CONTAINER_RUNS_DIR = f"{CONTAINER_LOGS_DIR}/premath-runs"
VENV = "/opt/premath"
PREMATH = f"{VENV}/bin/premath"
INSTALL_DIR = "/installed-agent/premath"
REMOTE_WHEELS = f"{INSTALL_DIR}/wheels"
REMOTE_SAMPLE_HARNESS = f"{INSTALL_DIR}/sample_harness.py"
REMOTE_POLICY = f"{INSTALL_DIR}/policy.json"
SANDBOX_BACKEND = "harbor-task-container"
MANAGED_PYTHON = "3.12"
MANAGED_PYTHON_DIR = "/opt/premath-python"
NO_PYTHON_MESSAGE = (
    "premath needs Python >= 3.11 with the venv module in the task image; python3 there is "
    "missing or older, and uv (which installs a managed Python) is not on PATH and could not be "
    "installed (no curl, or no network). Use an image with python3.11+ or uv, or bake premath "
    "into the image and pass --ak skip_install=true."
)


def install_command(requirement: list[str], python_version: str = MANAGED_PYTHON) -> str:
    """Shell line (as root): a venv at /opt/premath on a Python >= 3.11, then premath in it.

    The image's python3 when it is new enough; otherwise a uv-managed interpreter (uv installed
    the way Harbor's own Python agents do it), else a clear failure naming the requirement.
    `requirement` is pip arguments, e.g. `["--no-index", "--find-links", DIR, "premath"]`.
    """
    packages = shlex.join(requirement)
    python = shlex.quote(python_version)
    return (
        "set -eu; "
        "if python3 -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' "
        ">/dev/null 2>&1; then "
        f"python3 -m venv {VENV} && {VENV}/bin/python -m pip install --quiet {packages}; "
        "else "
        'export PATH="$HOME/.local/bin:$PATH"; '
        "if ! command -v uv >/dev/null 2>&1 && command -v curl >/dev/null 2>&1; then "
        "curl -LsSf https://astral.sh/uv/install.sh | sh >/dev/null 2>&1 || true; fi; "
        "if ! command -v uv >/dev/null 2>&1; then "
        f"echo {shlex.quote(NO_PYTHON_MESSAGE)} >&2; exit 1; fi; "
        # Outside root's home, so an unprivileged agent user can run the interpreter.
        f"export UV_PYTHON_INSTALL_DIR={MANAGED_PYTHON_DIR}; "
        f"uv venv --quiet --python {python} {VENV} && "
        f"uv pip install --quiet --python {VENV}/bin/python {packages}; "
        "fi; "
        f"{PREMATH} --version"
    )


def run_command(
    instruction: str,
    *,
    harness_command: str,
    model_name: str | None,
    policy_path: str | None,
    pass_env: list[str],
    dataset_id: str | None,
    task_id: str | None,
    session_id: str | None,
    timeout_s: float,
    atif_schema_version: str,
) -> str:
    """Shell line (as the agent): one headless `premath bench run`, keeping its exit status.

    The run folder is new on every attempt (time and shell pid). premath keeps
    /logs/agent/trajectory.json current while the harness runs (`--live-trajectory`), so Harbor
    collects a valid trajectory even from a run it stopped at its own timeout.
    """
    argv = [
        PREMATH,
        "bench",
        "run",
        "--instruction",
        instruction,
        "--command",
        harness_command,
        "--run-dir",
        "__RUN_DIR__",
        "--sandbox-backend",
        SANDBOX_BACKEND,
        "--timeout",
        f"{timeout_s:g}",
        "--atif-schema-version",
        atif_schema_version,
        "--live-trajectory",
        CONTAINER_TRAJECTORY,
        "--json",
    ]
    optional = {
        "--dataset-id": dataset_id,
        "--task-id": task_id,
        "--session-id": session_id,
        "--policy": policy_path,
    }
    if model_name:
        provider, _, name = model_name.rpartition("/")
        optional["--model-name"] = name
        optional["--model-provider"] = provider or None
    for flag, value in optional.items():
        if value:
            argv += [flag, value]
    for name in pass_env:
        argv += ["--pass-env", name]
    line = shlex.join(argv).replace("__RUN_DIR__", '"$run_dir"')
    return (
        f'run_dir="{CONTAINER_RUNS_DIR}/$(date -u +%Y%m%dT%H%M%SZ)-$$"; '
        f"mkdir -p {CONTAINER_RUNS_DIR}; "
        f"{line}"
    )
