"""premath's Harbor adapter in the real Harbor 0.26: construction, options, and whole trials.

Every trial is a real `harbor run` (Harbor's job, trial, log collection and verifier) of the
sample task in the test-only host-process environment, with premath installed offline from a
wheel built from this checkout.
"""

import shutil
import sys

import orjson
import pytest

from tests.harbor.conftest import (
    ADAPTERS,
    AGENT,
    EXAMPLE_POLICY,
    HarborJob,
    ak,
    harbor_errors,
    tool_folder,
)
from tests.support import optional_tools

if optional_tools.harbor().found is None:
    optional_tools.require(optional_tools.harbor(), module_level=True)
# Imported after the skip: Harbor exists only in the Harbor venv.

from harbor.agents.factory import AgentFactory
from harbor.models.trial.config import AgentConfig

from premath.atif.validate import validate_file

SECRET = "s3cret-value"
# The sample harness, wrapped to leave proof of the credential it was given in the workdir.
SAMPLE = "/installed-agent/premath/sample_harness.py"
WRAPPED_SAMPLE = (
    'sh -c \'printf %s "${BENCH_API_KEY-unset}" > key-seen.txt; '
    f'exec python3 {SAMPLE} "$@"\' harness'
)

# An image with a shell and coreutils but no usable Python (and no curl to fetch uv).
BASIC_TOOLS = ("bash", "sh", "mkdir", "rm", "cp", "cat", "date", "chmod", "ls", "dirname")
OLD_PYTHON = "#!/bin/sh\necho 'Python 3.10.12'; exit 1\n"


@pytest.fixture(scope="module")
def installed(harbor_run, wheelhouse, image_path) -> HarborJob:
    """One full trial: install from the wheelhouse, run the sample, verify."""
    return harbor_run(
        "installed",
        "--ek",
        f"path={image_path}",
        *ak(
            premath_wheel=str(wheelhouse),
            policy=str(EXAMPLE_POLICY),
            pass_env="BENCH_API_KEY,BENCH_UNSET_KEY",
            harness_command=WRAPPED_SAMPLE,
        ),
        env={"BENCH_API_KEY": SECRET},
    )


def test_trial_ends_with_reward_usage_and_a_valid_trajectory(installed):
    assert installed.returncode == 0, installed.output
    result = installed.result
    assert result["exception_info"] is None
    assert result["verifier_result"] == {"rewards": {"reward": 1.0}}
    agent = result["agent_result"]
    # The sample harness's three turns: 120 + 160 + 90 prompt, 18 + 9 + 12 completion tokens.
    assert (agent["n_input_tokens"], agent["n_output_tokens"], agent["n_cache_tokens"]) == (
        370,
        39,
        0,
    )
    assert agent["model_usage"] == {
        "scripted": {
            "n_input_tokens": 370,
            "n_cache_tokens": 0,
            "n_output_tokens": 39,
            "cost_usd": 0.0,
        }
    }
    assert agent["metadata"]["premath_status"] == "succeeded"
    trajectory_path = installed.trial_dir / "agent" / "trajectory.json"
    assert harbor_errors(trajectory_path) == []
    assert validate_file(trajectory_path).document()["valid"] is True
    trajectory = orjson.loads(trajectory_path.read_bytes())
    assert trajectory["schema_version"] == "ATIF-v1.8"
    assert trajectory["session_id"] == f"{installed.trial_dir.name}__agent"
    assert trajectory["trajectory_id"] == installed.premath_run.name
    assert trajectory["agent"]["model_name"] == "scripted"


def test_trial_carries_harbors_identity(installed):
    metadata = orjson.loads((installed.premath_run / "run-metadata.json").read_bytes())
    assert (metadata["task_id"], metadata["dataset_id"]) == ("hello-file", "premath-sample")
    assert (metadata["model_provider"], metadata["model_name"]) == ("test", "scripted")
    assert metadata["session_id"] == f"{installed.trial_dir.name}__agent"
    assert metadata["atif_schema_version"] == "ATIF-v1.8"
    assert metadata["sandbox_backend"] == "harbor-task-container"
    task = orjson.loads((installed.premath_run / "raw" / "in" / "task.json").read_bytes())
    assert task["model"] == {"provider": "test", "name": "scripted"}
    assert (task["task_id"], task["dataset_id"]) == ("hello-file", "premath-sample")


def test_listed_credentials_reach_the_harness_and_missing_ones_are_recorded(installed):
    seen = installed.trial_dir / "host-root" / "app" / "key-seen.txt"
    assert seen.read_text() == SECRET
    metadata = orjson.loads((installed.premath_run / "run-metadata.json").read_bytes())
    assert metadata["pass_env"] == ["BENCH_API_KEY", "BENCH_UNSET_KEY"]
    assert metadata["pass_env_missing"] == ["BENCH_UNSET_KEY"]
    warning = "pass_env lists BENCH_UNSET_KEY, but it is not set on the Harbor host"
    assert warning in (installed.trial_dir / "trial.log").read_text()
    assert SECRET not in (installed.premath_run / "run-metadata.json").read_text()


def test_timeout_with_skip_install_leaves_a_valid_partial_trajectory(installed, harbor_run):
    """Pre-baked premath (skip_install), files uploaded per run, Harbor's timeout hit mid-run."""
    venv = installed.trial_dir / "host-root" / "opt" / "premath"
    slow = f"sh -c 'python3 {SAMPLE} \"$@\"; sleep 60' harness"
    job = harbor_run(
        "timeout",
        "--agent-timeout-multiplier",
        "0.01",  # the task's 900 s becomes 9 s
        "--ek",
        "prebaked=" + orjson.dumps({"/opt/premath": str(venv)}).decode(),
        *ak(skip_install="true", harness_command=slow, policy=str(EXAMPLE_POLICY)),
    )
    assert job.result["exception_info"]["exception_type"] == "AgentTimeoutError", job.output
    trajectory_path = job.trial_dir / "agent" / "trajectory.json"
    assert harbor_errors(trajectory_path) == []
    trajectory = orjson.loads(trajectory_path.read_bytes())
    messages = [step["message"] for step in trajectory["steps"]]
    assert "Done: hello.txt holds 'hello'." in messages
    # Killed before it finished: no summary, so the trajectory is the live export.
    assert not (job.premath_run / "summary.json").exists()


def test_image_without_python_311_fails_install_with_a_clear_message(harbor_run, tmp_path):
    tools = {name: shutil.which(name) or name for name in BASIC_TOOLS}
    path = tool_folder(tmp_path / "bin", {**tools, "python3": OLD_PYTHON})
    job = harbor_run("no-python", "--ek", f"path={path}", *ak(premath_requirement="premath==0.1.0"))
    exception = job.result["exception_info"]
    assert "premath needs Python >= 3.11 with the venv module" in exception["exception_message"]


def test_image_without_python_311_gets_a_uv_managed_interpreter(harbor_run, wheelhouse, tmp_path):
    """uv resolves the interpreter (downloads are off here: CI has no GitHub access)."""
    found = optional_tools.require(optional_tools.uv())
    # The host's tools, but python3 is too old; a Python 3.12 is there for uv to find.
    shadow = {"python3": OLD_PYTHON, "python3.12": sys.executable, "uv": found}
    path = tool_folder(tmp_path / "bin", shadow) + ":/usr/bin:/bin"
    job = harbor_run(
        "uv-python",
        "--ek",
        f"path={path}",
        "--ek",
        'variables={"UV_PYTHON_DOWNLOADS": "never"}',
        *ak(
            premath_wheel=str(wheelhouse),
            policy=str(EXAMPLE_POLICY),
            harness_command=f"/opt/premath/bin/python {SAMPLE}",
        ),
    )
    assert job.result["exception_info"] is None, job.output
    assert job.result["verifier_result"] == {"rewards": {"reward": 1.0}}


def test_harbor_constructs_the_agent_with_its_model(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ADAPTERS))
    config = AgentConfig(
        import_path=AGENT,
        model_name="anthropic/claude-x",
        kwargs={"premath_wheel": "w.whl", "timeout_s": "300", "pass_env": "A, B"},
    )
    agent = AgentFactory.create_agent_from_config(config, logs_dir=tmp_path)
    assert agent.model_name == "anthropic/claude-x"
    assert agent.render_instruction("do it") == "do it"
    assert (agent.options.timeout_s, agent.options.pass_env) == (300.0, ["A", "B"])
    assert agent.options.atif_schema_version == "ATIF-v1.8"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"timeout": "300"}, "Unknown option 'timeout'."),
        ({"timeout_s": "soon"}, "timeout_s: Input should be a valid number"),
        ({"atif_schema_version": "ATIF-v9"}, "atif_schema_version: Input should be"),
    ],
)
def test_a_mistyped_or_ill_typed_option_is_an_error(kwargs, message, monkeypatch):
    monkeypatch.syspath_prepend(str(ADAPTERS))
    config = AgentConfig(import_path=AGENT, model_name="test/m", kwargs=kwargs)
    with pytest.raises(ValueError, match="Invalid kwargs for agent 'premath'") as raised:
        AgentFactory.run_preflight(config, skip_credential_checks=True)
    assert message in str(raised.value)


def test_harbor_run_refuses_an_unknown_option(harbor_run):
    job = harbor_run("typo", *ak(harness_comand="x"))
    assert job.returncode != 0
    assert "Unknown option 'harness_comand'." in job.output
    assert not (job.job_dir).exists() or not any(p.is_dir() for p in job.job_dir.iterdir())
