"""The instruction policy registry ships with premath (divergence D35-1): used where the
repository has none, the repository's own winning whole; `init --with-policies` writes it."""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import orjson
import pytest

from premath.harness.instruction.policy import BUILTIN_POLICY_DIR
from tests.instruction.envelopes import POLICY_CI, envelope

REPO = Path(__file__).resolve().parents[2]
INSTRUCTION = "instructions/20260301T000000Z-first.json"


def test_the_shipped_registry_is_the_repository_s_own():
    shipped = {path.name: path.read_bytes() for path in BUILTIN_POLICY_DIR.glob("*.json")}
    ours = {path.name: path.read_bytes() for path in (REPO / "policies" / "instruction").iterdir()}
    assert shipped == ours


def write_envelope(root: Path, **overrides) -> None:
    (root / "instructions").mkdir(exist_ok=True)
    (root / INSTRUCTION).write_text(json.dumps(envelope(**overrides)))


def test_a_repository_without_a_registry_uses_the_shipped_one(cli_run, workdir):
    write_envelope(workdir)
    result = cli_run("instruction-check", "--instruction", INSTRUCTION, "--json")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.json["policyDigest"] == POLICY_CI
    assert not (workdir / "policies").exists()


def test_the_repository_s_own_registry_wins_whole(cli_run, workdir):
    own = workdir / "policies" / "instruction"
    own.mkdir(parents=True)
    (own / "policy-test-v1.json").write_bytes(
        (BUILTIN_POLICY_DIR / "policy-test-v1.json").read_bytes()
    )
    write_envelope(workdir)
    result = cli_run("instruction-check", "--instruction", INSTRUCTION)
    assert result.exit_code == 2
    assert f'instruction_unknown_policy: policyDigest "{POLICY_CI}" is not registered' in (
        result.stderr
    )


def test_a_registry_path_that_is_a_file_is_still_refused(cli_run, workdir):
    (workdir / "policies").mkdir()
    (workdir / "policies" / "instruction").write_text("not a folder\n")
    write_envelope(workdir)
    result = cli_run("instruction-check", "--instruction", INSTRUCTION)
    assert result.exit_code == 2
    assert "instruction_unknown_policy: policy registry not found at ./policies/instruction" in (
        result.stderr
    )


def test_init_writes_the_registry_only_when_asked_and_never_over_the_team_s_own(cli_run, workdir):
    plain = cli_run("init", "--json")
    assert plain.exit_code == 0
    assert "policiesWritten" not in plain.json
    assert not (workdir / "policies").exists()
    asked = cli_run("init", "--with-policies", "--json")
    assert asked.json["policiesWritten"] == [
        "policies/instruction/policy-ci-instruction-smoke-v1.json",
        "policies/instruction/policy-ci-v1.json",
        "policies/instruction/policy-test-v1.json",
    ]
    for name in asked.json["policiesWritten"]:
        assert (workdir / name).read_bytes() == (BUILTIN_POLICY_DIR / Path(name).name).read_bytes()
    edited = workdir / "policies" / "instruction" / "policy-ci-v1.json"
    edited.write_text("the team's own\n")
    again = cli_run("init", "--with-policies")
    assert again.exit_code == 0
    assert again.stdout.endswith("  policies: policies/instruction/ exists; left as it is\n")
    assert edited.read_text() == "the team's own\n"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A throwaway venv with premath pip-installed from a wheel built from this checkout
    (package data and all); its dependencies are the test environment's, seen through a `.pth`
    line (which, unlike a site folder, does not pull in this checkout's editable install)."""
    folder = tmp_path_factory.mktemp("installed")
    venv, wheels = folder / "venv", folder / "wheels"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
    )
    Path(site.stdout.decode().strip(), "test-deps.pth").write_text(
        sysconfig.get_path("purelib") + "\n"
    )
    source = folder / "source"  # a clean copy: no stale build/ or egg-info to hide a gap
    shutil.copytree(
        REPO / "premath", source / "premath", ignore=shutil.ignore_patterns("__pycache__")
    )
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(REPO / name, source / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    build = [*pip, "wheel", "--no-deps", "--wheel-dir", str(wheels), str(source)]
    subprocess.run(build, check=True, capture_output=True, timeout=300)
    (wheel,) = wheels.glob("premath-*.whl")
    # --ignore-installed: the .pth shows pip this checkout's own install, "already satisfied"
    install = [*pip, "--python", str(python), "install", "--no-deps", "--ignore-installed"]
    install.append(str(wheel))
    subprocess.run(install, check=True, capture_output=True, timeout=300)
    return venv


def test_a_pip_installed_premath_runs_an_instruction_in_a_fresh_repository(installed, tmp_path):
    project = tmp_path / "app"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}

    def premath(*args: str) -> subprocess.CompletedProcess[bytes]:
        argv = [str(installed / "bin" / "premath"), *args]
        return subprocess.run(argv, cwd=project, env=env, capture_output=True, timeout=120)

    where = subprocess.run(
        [installed / "bin" / "python", "-c", "import premath; print(premath.__file__)"],
        cwd=project,
        env=env,
        capture_output=True,
        check=True,
    )
    assert where.stdout.decode().startswith(str(installed))  # not this checkout
    assert premath("init").returncode == 0
    write_envelope(project)
    done = premath(
        "instruction-run", "--instruction", INSTRUCTION, "--check-command", "true {check}", "--json"
    )
    assert done.returncode == 0, done.stderr
    assert orjson.loads(done.stdout)["verdictClass"] == "accepted"
    assert not (project / "policies").exists()
    assert premath("init", "--with-policies").returncode == 0
    assert sorted(p.name for p in (project / "policies" / "instruction").iterdir()) == [
        "policy-ci-instruction-smoke-v1.json",
        "policy-ci-v1.json",
        "policy-test-v1.json",
    ]
