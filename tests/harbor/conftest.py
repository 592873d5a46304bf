"""Run the premath agent through the real Harbor 0.26 (`harbor run`), with premath built here.

Harbor needs Python >= 3.12, so these tests run in the Harbor venv that `.ci/run` builds
(`.venv-harbor/bin/python -m pytest tests/harbor`); elsewhere they skip with that reason (the
probe is tests/support/optional_tools.py), and `PREMATH_REQUIRE_HARBOR=1` (set by CI) turns the
skip into a failure.
"""

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
ADAPTERS = REPO_ROOT / "tools" / "terminal-bench" / "adapters"
EXAMPLE_POLICY = REPO_ROOT / "tools" / "terminal-bench" / "configs" / "deny.example.json"
DATASET = Path(__file__).resolve().parent / "datasets" / "premath-sample"
"""A local Harbor dataset (a folder of tasks) of one task, `hello-file`."""
ENVIRONMENT = "tests.harbor.host_environment:HostProcessEnvironment"
AGENT = "premath_agent:PremathAgent"


def ak(**options: str) -> list[str]:
    """`--ak key=value` arguments of the premath agent."""
    return [part for key, value in options.items() for part in ("--ak", f"{key}={value}")]


def harbor_errors(path: Path) -> list[str]:
    """What Harbor's own trajectory validator finds wrong with the file (nothing: valid)."""
    from harbor.utils.trajectory_validator import TrajectoryValidator

    validator = TrajectoryValidator()
    return [] if validator.validate(str(path)) else validator.get_errors()


@dataclass(frozen=True)
class HarborJob:
    """One finished `harbor run` of the sample task: its process outcome and its one trial."""

    returncode: int
    output: str
    job_dir: Path

    @property
    def trial_dir(self) -> Path:
        (trial,) = [path for path in self.job_dir.iterdir() if path.is_dir()]
        return trial

    @property
    def result(self) -> Any:
        return orjson.loads((self.trial_dir / "result.json").read_bytes())

    @property
    def premath_run(self) -> Path:
        (run,) = (self.trial_dir / "agent" / "premath-runs").iterdir()
        return run


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """premath built from this checkout plus its dependencies: the trial installs it offline."""
    folder = tmp_path_factory.mktemp("wheelhouse")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--wheel-dir",
            str(folder),
            str(REPO_ROOT),
        ],
        check=True,
        capture_output=True,
    )
    return folder


def tool_folder(folder: Path, tools: dict[str, str]) -> str:
    """A PATH of one folder holding `name -> host program` links and `name -> script` files."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, target in tools.items():
        if target.startswith("#!"):
            (folder / name).write_text(target)
            (folder / name).chmod(0o755)
        else:
            (folder / name).symlink_to(target)
    return str(folder)


@pytest.fixture(scope="session")
def image_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """PATH of the default "image": host tools, with python3 the interpreter running Harbor."""
    folder = tmp_path_factory.mktemp("image-bin")
    return f"{tool_folder(folder, {'python3': sys.executable})}:/usr/bin:/bin"


@pytest.fixture(scope="session")
def harbor_run(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., HarborJob]:
    """`harbor_run(name, *args, env={...})`: `harbor run` of the sample task, one trial (by
    default in the host-process environment, keeping what the trial made)."""
    jobs = tmp_path_factory.mktemp("jobs")
    harbor = shutil.which("harbor", path=os.path.dirname(sys.executable))
    assert harbor is not None, "the harbor command is not installed beside this interpreter"

    def run(
        name: str,
        *args: str,
        env: dict[str, str] | None = None,
        dataset: Path = DATASET,
        environment: str = ENVIRONMENT,
        delete: bool = False,
    ) -> HarborJob:
        process_env = {
            **os.environ,
            "PYTHONPATH": f"{ADAPTERS}{os.pathsep}{REPO_ROOT}",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            **(env or {}),
        }
        argv = [
            harbor, "run", "-p", str(dataset), "--agent", AGENT, "-m", "test/scripted",
            "--env", environment, "-o", str(jobs), "--job-name", name, "-n", "1", "-y", "-q",
            "--delete" if delete else "--no-delete", *args,
        ]  # fmt: skip
        done = subprocess.run(
            argv, env=process_env, capture_output=True, text=True, timeout=600, check=False
        )
        return HarborJob(done.returncode, done.stdout + done.stderr, jobs / name)

    return run
