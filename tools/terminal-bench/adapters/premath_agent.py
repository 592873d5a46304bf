"""Harbor installed agent: premath drives a harness headlessly inside each task container.

    harbor run -d terminal-bench@2.0 --agent premath_agent:PremathAgent -m provider/model \
        --ak premath_wheel=dist/premath-0.1.0-py3-none-any.whl --ak harness_command="..."

`install` puts premath in a venv at /opt/premath (from an uploaded wheel, or a pip requirement),
and the harness (the scripted sample when none is named). `run` executes one `premath bench run`
with the task's instruction, approval mode full-access and the deny policy, writing its run folder
under /logs/agent/premath-runs/ and copying the ATIF trajectory to /logs/agent/trajectory.json,
where Harbor collects it. The command builders are plain functions, so they are tested without
Harbor; Harbor itself is optional (the stand-in base class below keeps this module importable).
"""

import json
import shlex
from pathlib import Path
from typing import Any

try:
    from harbor.agents.installed.base import BaseInstalledAgent, with_prompt_template
    from harbor.models.agent.context import AgentContext

    HARBOR_AVAILABLE = True
    try:
        from harbor.agents.base import AgentCapabilities

        CAPABILITIES: Any = AgentCapabilities(atif=True)
    except (ImportError, TypeError):  # older Harbor: no capabilities model
        CAPABILITIES = None
except ImportError:  # Harbor is optional: without it this module still imports, for tests
    HARBOR_AVAILABLE = False
    AgentContext = Any
    CAPABILITIES = None

    class BaseInstalledAgent:  # type: ignore[no-redef]
        """Stand-in with the parts of Harbor 0.26's base that this adapter uses."""

        def __init__(
            self,
            logs_dir: Path | None = None,
            model_name: str | None = None,
            *args: Any,
            **kwargs: Any,
        ) -> None:
            self.logs_dir = Path(logs_dir) if logs_dir is not None else Path("logs/agent")
            self.model_name = model_name

        async def exec_as_root(self, environment: Any, command: str, **kwargs: Any) -> Any:
            return await environment.exec(command=command, **kwargs)

        async def exec_as_agent(self, environment: Any, command: str, **kwargs: Any) -> Any:
            return await environment.exec(command=command, **kwargs)

    def with_prompt_template(function: Any) -> Any:
        return function


CONTAINER_LOGS_DIR = "/logs/agent"
CONTAINER_TRAJECTORY = f"{CONTAINER_LOGS_DIR}/trajectory.json"
CONTAINER_RUNS_DIR = f"{CONTAINER_LOGS_DIR}/premath-runs"
VENV = "/opt/premath"
PREMATH = f"{VENV}/bin/premath"
INSTALL_DIR = "/installed-agent"
REMOTE_WHEEL_DIR = f"{INSTALL_DIR}/wheels"
REMOTE_SAMPLE_HARNESS = f"{INSTALL_DIR}/sample_harness.py"
REMOTE_POLICY = f"{INSTALL_DIR}/policy.json"
SAMPLE_HARNESS = Path(__file__).resolve().parents[1] / "sample" / "harness.py"
DATASET_ID = "terminal-bench@2.0"
SANDBOX_BACKEND = "harbor-task-container"


def install_command(requirement: str) -> str:
    """Shell line (as root): python3 with venv, then premath from `requirement` in /opt/premath."""
    return (
        "set -eu; "
        "if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then "
        "(apt-get update && apt-get install -y python3 python3-venv python3-pip) >/dev/null; fi; "
        f"python3 -m venv {VENV} && "
        f"{VENV}/bin/python -m pip install --quiet {shlex.quote(requirement)} && "
        f"{PREMATH} --version"
    )


def run_command(
    instruction: str,
    *,
    harness_command: str,
    model_name: str | None,
    policy_path: str | None,
    pass_env: list[str],
    dataset_id: str = DATASET_ID,
    task_id: str | None = None,
    timeout_s: float | None = None,
) -> str:
    """Shell line (as the agent): one headless `premath bench run`, then the trajectory copy.

    The run folder is new on every attempt (time and shell pid); premath's exit status is kept,
    and the trajectory is copied even when the run failed, so Harbor sees the partial one.
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
        "--dataset-id",
        dataset_id,
        "--sandbox-backend",
        SANDBOX_BACKEND,
        "--json",
    ]
    optional = {
        "--task-id": task_id,
        "--policy": policy_path,
        "--timeout": None if timeout_s is None else f"{timeout_s:g}",
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
        f"{line}; status=$?; "
        f'cp "$run_dir/atif/trajectory.json" {CONTAINER_TRAJECTORY} 2>/dev/null || true; '
        'exit "$status"'
    )


def summarise_runs(logs_dir: Path) -> dict[str, Any] | None:
    """usage of the newest run's summary.json under `<logs_dir>/premath-runs/`, if any."""
    summaries = sorted((logs_dir / "premath-runs").glob("*/summary.json"))
    if not summaries:
        return None
    try:
        summary = json.loads(summaries[-1].read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return summary.get("usage") if isinstance(summary, dict) else None


class PremathAgent(BaseInstalledAgent):
    """premath as a Harbor installed agent; options come as `--ak key=value`."""

    if CAPABILITIES is not None:
        capabilities = CAPABILITIES

    def __init__(
        self,
        logs_dir: Path | None = None,
        model_name: str | None = None,
        *args: Any,
        premath_wheel: str = "",
        premath_requirement: str = "premath",
        harness_command: str = "",
        harness_install: str = "",
        pass_env: str = "",
        policy: str = "",
        timeout_s: str = "",
        **kwargs: Any,
    ) -> None:
        super().__init__(logs_dir, model_name, *args, **kwargs)
        self.premath_wheel = premath_wheel
        self.premath_requirement = premath_requirement
        self.harness_command = harness_command or f"python3 {REMOTE_SAMPLE_HARNESS}"
        self.harness_install = harness_install
        self.pass_env = [name.strip() for name in pass_env.split(",") if name.strip()]
        self.policy = policy
        self.timeout_s = float(timeout_s) if timeout_s else None

    @staticmethod
    def name() -> str:
        return "premath"

    def get_version_command(self) -> str:
        return f"{PREMATH} --version"

    def parse_version(self, stdout: str) -> str:
        return stdout.strip().rpartition(" ")[2]

    async def install(self, environment: Any) -> None:
        await self.exec_as_root(environment, command=f"mkdir -p {REMOTE_WHEEL_DIR}")
        requirement = self.premath_requirement
        if self.premath_wheel:
            wheel = Path(self.premath_wheel)
            requirement = f"{REMOTE_WHEEL_DIR}/{wheel.name}"
            await environment.upload_file(wheel, requirement)
        await environment.upload_file(SAMPLE_HARNESS, REMOTE_SAMPLE_HARNESS)
        if self.policy:
            await environment.upload_file(Path(self.policy), REMOTE_POLICY)
        await self.exec_as_root(environment, command=install_command(requirement))
        if self.harness_install:
            await self.exec_as_root(environment, command=self.harness_install)

    @with_prompt_template
    async def run(self, instruction: str, environment: Any, context: Any) -> None:
        command = run_command(
            instruction,
            harness_command=self.harness_command,
            model_name=self.model_name,
            policy_path=REMOTE_POLICY if self.policy else None,
            pass_env=self.pass_env,
            timeout_s=self.timeout_s,
        )
        await self.exec_as_agent(environment, command=command)

    def populate_context_post_run(self, context: Any) -> None:
        usage = summarise_runs(Path(self.logs_dir))
        if not usage:
            return
        context.n_input_tokens = usage.get("prompt_tokens")
        context.n_cache_tokens = usage.get("cached_tokens")
        context.n_output_tokens = usage.get("completion_tokens")
        context.cost_usd = usage.get("cost_usd")
