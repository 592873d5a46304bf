"""run-harbor.sh and validate-atif.sh against the real Harbor 0.26."""

import os
import subprocess
import sys
from pathlib import Path

import orjson

from tests.harbor.conftest import ADAPTERS, AGENT, REPO_ROOT
from tests.support import optional_tools

if optional_tools.harbor().found is None:
    optional_tools.require(optional_tools.harbor(), module_level=True)
# Imported after the skip: Harbor exists only in the Harbor venv.

from harbor.agents.factory import AgentFactory
from harbor.cli.utils import parse_kwargs
from harbor.models.trial.config import AgentConfig

SCRIPTS = REPO_ROOT / "tools" / "terminal-bench" / "scripts"
VALID = {
    "schema_version": "ATIF-v1.8",
    "session_id": "s",
    "agent": {"name": "a", "version": "1"},
    "steps": [
        {
            "step_id": 1,
            "source": "agent",
            "message": "ls",
            "tool_calls": [{"tool_call_id": "c1", "function_name": "exec", "arguments": {}}],
            "observation": {"results": [{"source_call_id": "c1", "content": "x"}]},
        }
    ],
}


def test_run_harbor_passes_options_harbor_accepts(tmp_path, monkeypatch):
    """The example env file's settings, as run-harbor.sh hands them to `harbor run`."""
    stub = tmp_path / "harbor"
    stub.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {tmp_path / "argv"}\n')
    stub.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    done = subprocess.run(
        [str(SCRIPTS / "run-harbor.sh")], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    argv = (tmp_path / "argv").read_text().splitlines()
    options = [argv[i + 1] for i, part in enumerate(argv) if part == "--ak"]
    kwargs = parse_kwargs(options)
    assert kwargs["timeout_s"] == 840
    assert kwargs["atif_schema_version"] == "ATIF-v1.8"
    assert kwargs["pass_env"] == "ANTHROPIC_API_KEY"
    monkeypatch.syspath_prepend(str(ADAPTERS))
    config = AgentConfig(import_path=AGENT, model_name="anthropic/claude-x", kwargs=kwargs)
    AgentFactory.run_preflight(config, skip_credential_checks=True)


def validate(*files: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPTS / "validate-atif.sh"), *map(str, files)],
        env={**os.environ, "PYTHON": sys.executable, **env},
        capture_output=True,
        text=True,
        check=False,
    )


def test_validate_runs_both_validators_and_they_agree(tmp_path):
    good, broken = tmp_path / "good.json", tmp_path / "broken.json"
    good.write_bytes(orjson.dumps(VALID))
    step = {**VALID["steps"][0], "observation": {"results": [{"source_call_id": "c9"}]}}
    broken.write_bytes(orjson.dumps({**VALID, "steps": [step]}))
    assert validate(good, ALSO_HARBOR="1").returncode == 0
    done = validate(good, broken, ALSO_HARBOR="1")
    assert done.returncode == 1
    assert "disagree" not in done.stderr


def test_validate_fails_when_the_verdicts_disagree(tmp_path):
    good = tmp_path / "good.json"
    good.write_bytes(orjson.dumps(VALID))
    rejecting = tmp_path / "harbor-python"  # a "Harbor" that rejects everything
    rejecting.write_text("#!/bin/sh\nexit 1\n")
    rejecting.chmod(0o755)
    done = validate(good, HARBOR_PYTHON=str(rejecting))
    assert done.returncode == 1
    assert f"error: verdicts disagree on {good}: premath says valid, Harbor says invalid" in (
        done.stderr
    )
