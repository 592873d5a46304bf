"""A real MCP client nobody here wrote: the MCP Inspector's CLI mode lists our tools and calls
them against `premath mcp-serve`, over stdio and over streamable HTTP with a bearer token
(CI installs it: .ci/run). Without the package (or, for HTTP, a version whose CLI takes
`--header`) the tests skip and say how to install it."""

import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.cli.test_issue import row, seed, stored
from tests.mcp.client import REPO_ROOT, http_server, new_token, server_env, token_file

INSPECTOR = "@modelcontextprotocol/inspector"
INSTALL = f"npm install -g {INSPECTOR}@2.12.0"


def installed_inspector() -> Path:
    """The globally installed Inspector package's folder, found through npm (not npx's errors)."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("npx") is None:
        pytest.skip(f"Node's npm/npx are not installed (the MCP Inspector runs on Node): {INSTALL}")
    root = subprocess.run([npm, "root", "-g"], capture_output=True, text=True, check=False)
    package = Path(root.stdout.strip()) / INSPECTOR
    if not (package / "package.json").is_file():
        pytest.skip(f"{INSPECTOR} is not installed: {INSTALL}")
    return package


def inspector_takes_headers(package: Path) -> bool:
    """Whether the installed CLI has `--header` (the 0.x line before 0.16 has not)."""
    for script in package.rglob("*.js"):
        own = "node_modules" not in script.relative_to(package).parts
        if own and b"--header <" in script.read_bytes():
            return True
    return False


def inspector(workdir, *argv: str, expect_ok: bool = True) -> dict:
    installed_inspector()
    npx = shutil.which("npx")
    assert npx is not None
    done = subprocess.run(
        [npx, "--no-install", INSPECTOR, "--cli", *argv],
        capture_output=True,
        cwd=workdir,
        env={
            "PYTHONPATH": str(REPO_ROOT),
            "PATH": f"{Path(npx).parent}:/usr/bin:/bin",
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
    assert len(listed["tools"]) == 26
    assert listed["tools"][0]["name"] == "issue_ready"
    called = inspector(
        workdir, *stdio_server("--method", "tools/call", "--tool-name", "issue_ready")
    )
    document = orjson.loads(called["content"][0]["text"])
    assert [item["id"] for item in document["items"]] == ["bd-1"]


def test_inspector_over_streamable_http_with_a_bearer_token(workdir):
    if not inspector_takes_headers(installed_inspector()):
        pytest.skip(f"the installed {INSPECTOR} CLI has no --header option: {INSTALL}")
    seed(workdir, row("bd-1"), row("bd-2"))
    token = new_token()
    path = token_file(workdir.parent, inspector=token)
    options = ("--token-file", str(path), "--mutation-policy", "open")
    with http_server(workdir, *options, env=server_env()) as server:
        auth = ("--transport", "http", "--header", f"Authorization: Bearer {token}")
        listed = inspector(workdir, server.url, *auth, "--method", "tools/list")
        assert len(listed["tools"]) == 26
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
