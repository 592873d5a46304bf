"""premath's Harbor adapter in Harbor's own docker environment (`--env docker`), no stand-in.

One real `harbor run` of a task whose Dockerfile builds on the offline base image
(`FROM premath-base:bookworm`, made by tools/docker/setup.sh) and whose container has no
network: the adapter uploads premath's wheels (built here for the image's Python) and installs
them with no index, runs the sample harness, and Harbor's verifier scores the result. Needs a
running engine and the base image; without them the test skips, and with
`PREMATH_REQUIRE_HARBOR=1` (CI, which starts the engine) it fails instead.
"""

import platform
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests.harbor.conftest import (
    EXAMPLE_POLICY,
    REPO_ROOT,
    HarborJob,
    ak,
    harbor_errors,
)
from tests.support import optional_tools

if optional_tools.harbor().found is None:
    optional_tools.require(optional_tools.harbor(), module_level=True)

from premath.atif.validate import validate_file

BASE_IMAGE = optional_tools.DOCKER_BASE_IMAGE
DATASET = Path(__file__).resolve().parent / "datasets" / "premath-docker"
SAMPLE = "/installed-agent/premath/sample_harness.py"
# The sample harness, wrapped to record the container's network interfaces where Harbor
# collects the agent's logs (/logs/agent is a bind mount of the trial's agent/ folder).
NETWORK_PROBE = (
    f"sh -c 'ls /sys/class/net > /logs/agent/interfaces.txt; exec python3 {SAMPLE} \"$@\"' harness"
)


def docker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture(scope="module")
def engine() -> None:
    """A Docker engine with the compose plugin and the base image (required with Harbor)."""
    probe = optional_tools.docker_compose()
    if probe.found is None and optional_tools.required("harbor"):
        pytest.fail(f"PREMATH_REQUIRE_HARBOR=1 but {probe.missing}", pytrace=False)
    optional_tools.require(probe)


@pytest.fixture(scope="module")
def image_wheelhouse(engine: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """premath from this checkout plus binary wheels of its dependencies for the image's own
    Python and C library (asked of the image), so pip in the container needs no index."""
    probe = docker(
        "run", "--rm", "--network", "none", BASE_IMAGE, "python3", "-c",
        "import platform, sys; print(sys.version_info[0], sys.version_info[1], "
        "platform.libc_ver()[1].split('.')[1])",
    )  # fmt: skip
    assert probe.returncode == 0, probe.stderr
    major, minor, glibc_minor = probe.stdout.split()
    arch = platform.machine()
    platforms = [f"manylinux2014_{arch}"] + [
        f"manylinux_2_{version}_{arch}" for version in range(17, int(glibc_minor) + 1)
    ]
    folder = tmp_path_factory.mktemp("image-wheelhouse")
    pip = [sys.executable, "-m", "pip", "--quiet"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--wheel-dir", str(folder), str(REPO_ROOT)],
        check=True,
        capture_output=True,
    )
    (premath_wheel,) = folder.glob("premath-*.whl")
    subprocess.run(
        [
            *pip, "download", "--dest", str(folder), "--only-binary", ":all:",
            "--python-version", f"{major}.{minor}", "--implementation", "cp",
            *(part for tag in platforms for part in ("--platform", tag)), str(premath_wheel),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return folder


def harbor_images() -> set[str]:
    """Ids of the task images Harbor's docker environment builds (tagged `hb__<hash>`)."""
    return set(
        docker("images", "--quiet", "--no-trunc", "--filter", "reference=hb__*").stdout.split()
    )


def project_containers(job: HarborJob) -> list[str]:
    """Containers of the trial's compose project (Harbor names it `<trial>__env`)."""
    project = f"{job.trial_dir.name}__env".lower()
    listed = docker(
        "ps", "--all", "--quiet", "--filter", f"label=com.docker.compose.project={project}"
    )
    return listed.stdout.split()


@pytest.fixture(scope="module")
def docker_trial(harbor_run, image_wheelhouse: Path) -> Iterator[tuple[HarborJob, set[str]]]:
    """One trial in Harbor's docker environment with `--delete`, and the task images it left;
    whatever it left behind is removed afterwards all the same."""
    images_before = harbor_images()
    job = harbor_run(
        "docker",
        *ak(
            premath_wheel=str(image_wheelhouse),
            policy=str(EXAMPLE_POLICY),
            harness_command=NETWORK_PROBE,
        ),
        dataset=DATASET,
        environment="docker",
        delete=True,
    )
    left_images = harbor_images() - images_before
    yield job, left_images
    if job.job_dir.exists() and any(path.is_dir() for path in job.job_dir.iterdir()):
        for container in project_containers(job):
            docker("rm", "--force", "--volumes", container)
    for image in left_images:
        docker("rmi", "--force", image)


def test_docker_trial_ends_with_reward_and_a_valid_trajectory(docker_trial):
    job, _ = docker_trial
    assert job.returncode == 0, job.output
    result = job.result
    assert result["exception_info"] is None, job.output
    assert result["verifier_result"] == {"rewards": {"reward": 1.0}}
    assert result["agent_result"]["metadata"]["premath_status"] == "succeeded"
    assert (
        result["agent_result"]["n_input_tokens"],
        result["agent_result"]["n_output_tokens"],
    ) == (
        370,
        39,
    )
    trajectory_path = job.trial_dir / "agent" / "trajectory.json"
    assert harbor_errors(trajectory_path) == []
    assert validate_file(trajectory_path).document()["valid"] is True
    trajectory = orjson.loads(trajectory_path.read_bytes())
    assert trajectory["session_id"] == f"{job.trial_dir.name}__agent"
    assert trajectory["trajectory_id"] == job.premath_run.name
    metadata = orjson.loads((job.premath_run / "run-metadata.json").read_bytes())
    assert (metadata["task_id"], metadata["dataset_id"]) == ("hello-file", "premath-docker")


def test_premath_installed_offline_in_a_container_without_network(docker_trial):
    job, _ = docker_trial
    assert (job.trial_dir / "agent" / "interfaces.txt").read_text().split() == ["lo"]
    install = job.trial_dir / "trial.log"
    assert "--no-index --find-links /installed-agent/premath/wheels premath" in install.read_text()


def test_docker_trial_leaves_no_container_or_image(docker_trial):
    job, left_images = docker_trial
    assert project_containers(job) == []
    assert left_images == set()
