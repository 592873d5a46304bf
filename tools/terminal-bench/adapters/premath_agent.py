"""Harbor installed agent: premath drives a harness headlessly inside each task container.

    harbor run -d terminal-bench@2.0 --agent premath_agent:PremathAgent -m provider/model \
        --ak premath_wheel=dist/premath-0.1.0-py3-none-any.whl --ak harness_command="..."

Harbor constructs the agent itself (`AgentFactory`: keyword arguments only) and validates every
`--ak` against `PremathAgentOptions`, so a mistyped or ill-typed option fails the job up front.
`install` puts premath in a venv at /opt/premath (skipped with `skip_install=true`);
`configure`, which Harbor runs on every trial, uploads what `run` needs (sample harness, policy);
`run` executes one `premath bench run` carrying Harbor's identity (task, dataset, model, session)
and leaves the ATIF trajectory at /logs/agent/trajectory.json, where Harbor collects it.
Needs Harbor 0.26 (Python >= 3.12); the shell lines come from `premath_commands.py`.
"""

import json
from pathlib import Path
from typing import Any

from harbor.agents.capabilities import AgentCapabilities
from harbor.agents.installed.base import BaseInstalledAgent, with_prompt_template
from harbor.agents.options import InstalledAgentOptions
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext
from harbor.models.trajectories import Trajectory
from harbor.models.trial.config import TrialConfig
from premath_commands import (
    INSTALL_DIR,
    MANAGED_PYTHON,
    PREMATH,
    REMOTE_POLICY,
    REMOTE_SAMPLE_HARNESS,
    REMOTE_WHEELS,
    install_command,
    run_command,
)
from pydantic import Field, field_validator

SAMPLE_HARNESS = Path(__file__).resolve().parents[1] / "sample" / "harness.py"
ATIF_VERSIONS = Trajectory.model_fields["schema_version"].annotation
NEWEST_ATIF = Trajectory.model_fields["schema_version"].default
DEFAULT_TIMEOUT_S = 840.0
"""Below the 900 s agent timeout of Harbor's task template, so premath stops the harness and
writes its artifacts before Harbor cancels the agent."""


class PremathAgentOptions(InstalledAgentOptions):
    """`--ak` options of the premath agent (unknown keys and wrong types are errors)."""

    premath_wheel: str | None = Field(
        None,
        description="Host path of a premath wheel, or of a folder of wheels (premath and its "
        "dependencies), installed with no index: no network needed.",
    )
    premath_requirement: str | None = Field(
        None, description="pip requirement for premath when no wheel is given (needs network)."
    )
    harness_command: str | None = Field(
        None, description="Harness command line; default: the scripted sample harness."
    )
    harness_install: str | None = Field(None, description="Shell line run once as root.")
    pass_env: list[str] = Field(
        default_factory=list,
        description="Names of variables (API keys) passed from the Harbor host to the harness: "
        "a list or one comma-separated string.",
    )
    policy: str | None = Field(None, description="Host path of a deny-rules JSON file.")
    timeout_s: float = Field(
        DEFAULT_TIMEOUT_S, gt=0, description="Seconds the harness may run; keep it below Harbor's."
    )
    atif_schema_version: ATIF_VERSIONS = Field(  # type: ignore[valid-type]
        NEWEST_ATIF, description="ATIF version of the trajectory (default: the newest)."
    )
    python_version: str = Field(
        MANAGED_PYTHON, description="Python uv installs when the image has no Python >= 3.11."
    )

    @field_validator(
        "premath_wheel",
        "premath_requirement",
        "harness_command",
        "harness_install",
        "policy",
        mode="before",
    )
    @classmethod
    def empty_is_unset(cls, value: Any) -> Any:
        return None if value == "" else value

    @field_validator("pass_env", mode="before")
    @classmethod
    def comma_separated(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [name.strip() for name in value.split(",") if name.strip()]
        return value


def trial_identity(logs_dir: Path) -> tuple[str | None, str | None]:
    """(task id, dataset) of the trial whose agent logs go to `logs_dir`, from its config.json."""
    path = logs_dir.parent / "config.json"
    try:
        task = TrialConfig.model_validate_json(path.read_text(encoding="utf-8")).task
    except (OSError, ValueError):
        return None, None
    task_id = task.name or (task.path.name if task.path else None)
    return task_id, task.source


def latest_summary(logs_dir: Path) -> dict[str, Any] | None:
    """The newest run's summary.json under `<logs_dir>/premath-runs/`, if any."""
    summaries = sorted((logs_dir / "premath-runs").glob("*/summary.json"))
    if not summaries:
        return None
    try:
        summary = json.loads(summaries[-1].read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return summary if isinstance(summary, dict) else None


class PremathAgent(BaseInstalledAgent):
    """premath as a Harbor installed agent; options come as `--ak key=value`."""

    capabilities = AgentCapabilities(atif=True)
    options_model = PremathAgentOptions

    @property
    def settings(self) -> PremathAgentOptions:
        assert isinstance(self.options, PremathAgentOptions)
        return self.options

    @staticmethod
    def name() -> str:
        return "premath"

    def get_version_command(self) -> str:
        return f"{PREMATH} --version"

    def parse_version(self, stdout: str) -> str:
        return stdout.strip().rpartition(" ")[2]

    async def install(self, environment: BaseEnvironment) -> None:
        settings = self.settings
        if settings.premath_wheel:
            wheel = Path(settings.premath_wheel)
            await self.exec_as_root(environment, command=f"mkdir -p {REMOTE_WHEELS}")
            if wheel.is_dir():
                await environment.upload_dir(wheel, REMOTE_WHEELS)
                requirement = ["--no-index", "--find-links", REMOTE_WHEELS, "premath"]
            else:
                await environment.upload_file(wheel, f"{REMOTE_WHEELS}/{wheel.name}")
                requirement = [f"{REMOTE_WHEELS}/{wheel.name}"]
        elif settings.premath_requirement:
            requirement = [settings.premath_requirement]
        else:
            raise ValueError(
                "premath agent: give --ak premath_wheel=PATH (a wheel, or a folder of wheels), "
                "--ak premath_requirement=SPEC, or --ak skip_install=true for an image with premath"
            )
        await self.exec_as_root(
            environment, command=install_command(requirement, settings.python_version)
        )
        if settings.harness_install:
            await self.exec_as_root(environment, command=settings.harness_install)

    async def configure(self, environment: BaseEnvironment) -> None:
        """Per trial, also with skip_install: the files `run` reads (the sample harness is
        always there, for harness commands that wrap it)."""
        await self.exec_as_root(environment, command=f"mkdir -p {INSTALL_DIR}")
        await self._upload_agent_owned_file(environment, SAMPLE_HARNESS, REMOTE_SAMPLE_HARNESS)
        if self.settings.policy:
            await self._upload_agent_owned_file(
                environment, Path(self.settings.policy), REMOTE_POLICY
            )

    def _passed_env(self) -> dict[str, str]:
        """The listed variables set on the Harbor host; each unset one is warned about here and
        recorded by premath in run-metadata.json (`pass_env_missing`)."""
        passed: dict[str, str] = {}
        for name in self.settings.pass_env:
            value = self._get_env(name)
            if value is None:
                self.logger.warning(
                    "pass_env lists %s, but it is not set on the Harbor host; the harness "
                    "runs without it",
                    name,
                )
            else:
                passed[name] = value
        return passed

    @with_prompt_template
    async def run(
        self, instruction: str, environment: BaseEnvironment, context: AgentContext
    ) -> None:
        settings = self.settings
        task_id, dataset_id = trial_identity(Path(self.logs_dir))
        command = run_command(
            instruction,
            harness_command=settings.harness_command or f"python3 {REMOTE_SAMPLE_HARNESS}",
            model_name=self.model_name,
            policy_path=REMOTE_POLICY if settings.policy else None,
            pass_env=settings.pass_env,
            dataset_id=dataset_id,
            task_id=task_id,
            session_id=self.session_id,
            timeout_s=settings.timeout_s,
            atif_schema_version=settings.atif_schema_version,
        )
        await self.exec_as_agent(environment, command=command, env=self._passed_env())

    def populate_context_post_run(self, context: AgentContext) -> None:
        summary = latest_summary(Path(self.logs_dir))
        if summary is None:
            return
        usage = summary.get("usage") or {}
        context.n_input_tokens = usage.get("prompt_tokens")
        context.n_cache_tokens = usage.get("cached_tokens")
        context.n_output_tokens = usage.get("completion_tokens")
        context.cost_usd = usage.get("cost_usd")
        context.metadata = {
            "premath_status": summary.get("status"),
            "premath_failure_class": summary.get("failure_class"),
            "premath_outcome": summary.get("outcome"),
        }
