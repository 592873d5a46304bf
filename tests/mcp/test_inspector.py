"""A real MCP client nobody here wrote: the MCP Inspector's CLI mode lists our tools and calls
`issue_ready` against `premath mcp-serve`. Whether the Inspector is installed is decided up front
(tests/support/optional_tools.py); CI installs it (.ci/run)."""

import shutil
import subprocess
import sys
from pathlib import Path

import orjson

from tests.cli.test_issue import row, seed
from tests.mcp.client import REPO_ROOT
from tests.support import optional_tools


def inspector_script(package: Path) -> Path:
    """The package's own `mcp-inspector` entry point (what `npx` would start)."""
    bins = orjson.loads((package / "package.json").read_bytes())["bin"]
    entry = bins["mcp-inspector"] if isinstance(bins, dict) else bins
    return package / entry


def inspector(workdir, *method: str) -> dict:
    package = Path(optional_tools.require(optional_tools.inspector()))
    node = shutil.which("node")
    assert node is not None, "npm is installed but node is not on PATH"
    argv = [node, str(inspector_script(package)), "--cli", sys.executable, "-m", "premath"]
    done = subprocess.run(
        [*argv, "mcp-serve", "--mutation-policy", "open", *method],
        capture_output=True,
        cwd=workdir,
        env={
            "PYTHONPATH": str(REPO_ROOT),
            "PATH": f"{Path(node).parent}:/usr/bin:/bin",
            "HOME": str(workdir),
        },
        timeout=120,
        check=False,
    )
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
