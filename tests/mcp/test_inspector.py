"""A real MCP client nobody here wrote: the MCP Inspector's CLI mode lists our tools and calls
`issue_ready` against `premath mcp-serve` (CI installs it: .ci/run)."""

import shutil
import subprocess
import sys

import orjson
import pytest

from tests.cli.test_issue import row, seed
from tests.mcp.client import REPO_ROOT

INSPECTOR = "@modelcontextprotocol/inspector"


def inspector(workdir, *method: str) -> dict:
    if shutil.which("npx") is None:
        pytest.skip("npx is not installed (the MCP Inspector runs on Node)")
    argv = ["npx", "--no-install", INSPECTOR, "--cli", sys.executable, "-m", "premath", "mcp-serve"]
    done = subprocess.run(
        [*argv, "--mutation-policy", "open", *method],
        capture_output=True,
        cwd=workdir,
        env={
            "PYTHONPATH": str(REPO_ROOT),
            "PATH": f"{shutil.which('npx').rsplit('/', 1)[0]}:/usr/bin:/bin",
            "HOME": str(workdir),
        },
        timeout=120,
        check=False,
    )
    if done.returncode != 0 and b"could not determine executable" in done.stderr + done.stdout:
        pytest.skip(f"{INSPECTOR} is not installed (npm install -g {INSPECTOR})")
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return orjson.loads(done.stdout)


def test_inspector_lists_tools_and_calls_issue_ready(workdir):
    seed(workdir, row("bd-1"))
    listed = inspector(workdir, "--method", "tools/list")
    assert len(listed["tools"]) == 24
    assert listed["tools"][0]["name"] == "issue_ready"
    called = inspector(workdir, "--method", "tools/call", "--tool-name", "issue_ready")
    document = orjson.loads(called["content"][0]["text"])
    assert [item["id"] for item in document["items"]] == ["bd-1"]
