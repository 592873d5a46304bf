"""A machine without an optional tool (the MCP Inspector, a Docker engine, Chromium, mise) runs
the README's test command to a pass: each test that needs one skips, saying how to install it.

The machine state is made for real in a child pytest run: an empty npm prefix (Node is there,
the Inspector is not), a Docker host that does not answer, a PATH without the tool.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import optional_tools

ROOT = Path(__file__).resolve().parents[1]


def _pytest(tmp_path: Path, target: str, **env: str) -> tuple[int, str]:
    """Run one test file in a child pytest with `env` over ours; (exit status, report)."""
    child_env = {**os.environ, **env}
    child_env.pop(optional_tools.REQUIRE_ENV, None)
    child_env.pop("PREMATH_REQUIRE_HARBOR", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", target],
        cwd=ROOT,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def _path_without(tmp_path: Path, *names: str) -> str:
    """This PATH with `names` hidden: each folder holding one is replaced by a copy of its
    symlinks without it (the folder may hold python3 or node, which must stay)."""
    folders = []
    for index, folder in enumerate(os.environ.get("PATH", "").split(os.pathsep)):
        entries = os.listdir(folder) if os.path.isdir(folder) else []
        if not any(name in entries for name in names):
            folders.append(folder)
            continue
        shadow = tmp_path / f"path-{index}"
        shadow.mkdir()
        for entry in entries:
            if entry not in names:
                (shadow / entry).symlink_to(os.path.join(folder, entry))
        folders.append(os.fspath(shadow))
    return os.pathsep.join(folders)


def _skips(report: str) -> list[str]:
    return re.findall(r"^SKIPPED \[\d+\] [^:]+:\d+: (.*)$", report, re.MULTILINE)


def test_node_without_the_inspector_skips_the_inspector_test_with_its_install_command(tmp_path):
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed: this test needs Node without the Inspector")
    prefix = tmp_path / "npm-prefix"
    prefix.mkdir()
    code, report = _pytest(tmp_path, "tests/mcp/test_inspector.py", NPM_CONFIG_PREFIX=str(prefix))
    assert code == 0, report
    assert _skips(report) == [
        "optional tool missing: the MCP Inspector (@modelcontextprotocol/inspector) is not "
        "installed for npm; install it with: npm install -g @modelcontextprotocol/inspector@2.12.0"
    ]


def test_a_docker_host_that_does_not_answer_skips_the_docker_tests(tmp_path):
    host = f"unix://{tmp_path}/no-engine.sock"
    code, report = _pytest(tmp_path, "tests/docker/test_executor.py", DOCKER_HOST=host)
    assert code == 0, report
    skips = set(_skips(report))
    assert len(skips) == 1, report
    reason = skips.pop()
    assert reason.startswith(optional_tools.SKIP_PREFIX)
    assert reason.endswith("install it with: mise run docker-setup (tools/docker/setup.sh)")


def test_no_chromium_on_path_skips_the_browser_test(tmp_path):
    path = _path_without(tmp_path, *optional_tools.CHROMIUM_NAMES)
    code, report = _pytest(tmp_path, "tests/runner/test_report_browser.py", PATH=path)
    assert code == 0, report
    assert set(_skips(report)) == {
        "optional tool missing: no chromium on PATH; install it with: apt-get install chromium "
        "(Debian)"
    }


def test_probes_decide_from_facts_on_this_path(tmp_path, monkeypatch):
    """mise and Chromium: found only when on PATH and answering `--version`."""
    monkeypatch.setenv("PATH", _path_without(tmp_path, "mise", *optional_tools.CHROMIUM_NAMES))
    optional_tools.mise.cache_clear()
    optional_tools.chromium.cache_clear()
    try:
        assert optional_tools.mise().found is None
        assert optional_tools.chromium().found is None
        fake = tmp_path / "bin"
        fake.mkdir()
        (fake / "mise").write_text("#!/bin/sh\nexit 1\n")  # on PATH, but does not answer
        (fake / "mise").chmod(0o755)
        monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
        optional_tools.mise.cache_clear()
        assert optional_tools.mise().found is None
    finally:
        optional_tools.mise.cache_clear()
        optional_tools.chromium.cache_clear()


def test_a_required_tool_that_is_missing_fails_instead_of_skipping(monkeypatch):
    probe = optional_tools.Probe("chromium", None, "no chromium on PATH", "apt-get install x")
    monkeypatch.setenv(optional_tools.REQUIRE_ENV, "docker,chromium")
    with pytest.raises(pytest.fail.Exception, match="requires chromium"):
        optional_tools.require(probe)
    monkeypatch.setenv(optional_tools.REQUIRE_ENV, "docker")
    with pytest.raises(pytest.skip.Exception, match="install it with: apt-get install x"):
        optional_tools.require(probe)
