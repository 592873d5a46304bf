"""A real MCP client nobody here wrote: the MCP Inspector's CLI mode lists our tools and calls
them against `premath mcp-serve`, over stdio and over streamable HTTP with a bearer token.
Whether the Inspector is installed is decided up front (tests/support/optional_tools.py); CI
installs it (.ci/run). The HTTP test also needs a CLI that takes `--header` (2.x)."""

import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.cli.test_issue import row, seed, stored
from tests.mcp.client import REPO_ROOT, http_server, new_token, server_env, token_file
from tests.support import optional_tools


def installed_inspector() -> Path:
    return Path(optional_tools.require(optional_tools.inspector()))


def inspector_script(package: Path) -> Path:
    """The package's own `mcp-inspector` entry point (what `npx` would start)."""
    bins = orjson.loads((package / "package.json").read_bytes())["bin"]
    entry = bins["mcp-inspector"] if isinstance(bins, dict) else bins
    return package / entry


def inspector_takes_headers(package: Path) -> bool:
    """Whether the installed CLI has `--header` (the 0.x line before 0.16 has not)."""
    for script in package.rglob("*.js"):
        own = "node_modules" not in script.relative_to(package).parts
        if own and b"--header <" in script.read_bytes():
            return True
    return False


def inspector(workdir, *argv: str, expect_ok: bool = True) -> dict:
    package = installed_inspector()
    node = shutil.which("node")
    assert node is not None, "npm is installed but node is not on PATH"
    done = subprocess.run(
        [node, str(inspector_script(package)), "--cli", *argv],
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
    if not expect_ok:
        assert done.returncode != 0, done.stdout
        return {"stdout": done.stdout.decode(errors="replace")}
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return orjson.loads(done.stdout)


def stdio_server(*method: str) -> list[str]:
    return [sys.executable, "-m", "premath", "mcp-serve", "--mutation-policy", "open", *method]


def test_inspector_lists_tools_and_calls_issue_ready(workdir):
    seed(workdir, row("bd-1"))
    listed = inspector(workdir, *stdio_server("--method", "tools/list"))
    assert len(listed["tools"]) == 31
    assert listed["tools"][0]["name"] == "issue_ready"
    called = inspector(
        workdir, *stdio_server("--method", "tools/call", "--tool-name", "issue_ready")
    )
    document = orjson.loads(called["content"][0]["text"])
    assert [item["id"] for item in document["items"]] == ["bd-1"]


def test_inspector_over_streamable_http_with_a_bearer_token(workdir):
    if not inspector_takes_headers(installed_inspector()):
        package = optional_tools.INSPECTOR_PACKAGE
        install = f"npm install -g {package}@{optional_tools.INSPECTOR_VERSION}"
        pytest.skip(f"the installed {package} CLI has no --header option: {install}")
    seed(workdir, row("bd-1"), row("bd-2"))
    token = new_token()
    path = token_file(workdir.parent, inspector=token)
    options = ("--token-file", str(path), "--mutation-policy", "open")
    with http_server(workdir, *options, env=server_env()) as server:
        auth = ("--transport", "http", "--header", f"Authorization: Bearer {token}")
        listed = inspector(workdir, server.url, *auth, "--method", "tools/list")
        assert len(listed["tools"]) == 31
        claim = ("--tool-name", "issue_claim_next", "--tool-arg", "assignee=inspector")
        called = inspector(workdir, server.url, *auth, "--method", "tools/call", *claim)
        assert orjson.loads(called["content"][0]["text"])["issue"]["id"] == "bd-1"
        wrong = ("--transport", "http", "--header", f"Authorization: Bearer {new_token()}")
        refused = inspector(workdir, server.url, *wrong, "--method", "tools/list", expect_ok=False)
        assert "issue_ready" not in refused["stdout"]
        lines = server.access_lines()
    assert stored(workdir)["bd-1"]["assignee"] == "inspector"
    tools = [line for line in lines if line["event"] == "tool"]
    assert [(line["tool"], line["caller"]) for line in tools] == [("issue_claim_next", "inspector")]
    assert any(line.get("status") == 401 for line in lines)
