"""Drive a real `premath mcp-serve` subprocess with the MCP SDK's own clients: stdio, and
streamable HTTP with a bearer token (`http_server`, `http_session`)."""

import contextlib
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import orjson
from mcp import ClientSession, StdioServerParameters, stdio_client

from premath.mcp.http_client import open_session
from premath.store.witness_mac import KEY_FILE_ENV, ensure_keyring, new_run_id, sidecar_bytes

REPO_ROOT = Path(__file__).resolve().parents[2]
POLICY_DIGEST = "pol1_4ba916ce38da5c5607eb7f41d963294b34b644deb1fa6d55e133b072ca001b39"


def server_env(**extra: str) -> dict[str, str]:
    """A server's environment: the checkout on PYTHONPATH, the test's witness key file."""
    env = {"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"}
    if KEY_FILE_ENV in os.environ:
        env[KEY_FILE_ENV] = os.environ[KEY_FILE_ENV]
    return {**env, **extra}


@contextlib.asynccontextmanager
async def session(cwd: Path, *options: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "premath", "mcp-serve", *options],
        cwd=str(cwd),
        env=server_env(),
    )
    with open(cwd / "server.stderr", "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            yield client


async def call(client: ClientSession, name: str, arguments: dict | None = None):
    """(is_error, document or error text) of one tool call."""
    result = await client.call_tool(name, {} if arguments is None else arguments)
    text = result.content[0].text
    return bool(result.is_error), (text if result.is_error else orjson.loads(text))


def witness_document(instruction_id: str, **fields) -> dict:
    """An accepted witness with the claims every gated tool needs (fields override)."""
    return {
        "instructionId": instruction_id,
        "verdictClass": "accepted",
        "policyDigest": POLICY_DIGEST,
        "capabilityClaims": ["capabilities.change_morphisms", "capabilities.change_morphisms.all"],
        "failureClasses": [],
        "runFinishedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **fields,
    }


def witness(workdir: Path, instruction_id: str, *, signed: bool = True, **fields) -> Path:
    """Write `artifacts/ciwitness/<id>.json`, with its MAC as the pipeline writes it unless
    `signed` is false (a hand-written witness)."""
    path = workdir / "artifacts" / "ciwitness" / f"{instruction_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = orjson.dumps(witness_document(instruction_id, **fields), option=orjson.OPT_INDENT_2)
    path.write_bytes(data + b"\n")
    if signed:
        key = ensure_keyring().signing
        Path(f"{path}.mac").write_bytes(sidecar_bytes(key, new_run_id(), data + b"\n"))
    return path


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_file(folder: Path, **tokens: str) -> Path:
    """A 0600 token file of `id token` lines."""
    path = folder / f"tokens-{secrets.token_hex(3)}"
    path.write_text("".join(f"{name} {token}\n" for name, token in tokens.items()))
    path.chmod(0o600)
    return path


@dataclass
class HttpServer:
    """A running `mcp-serve --transport streamable-http` process."""

    process: subprocess.Popen
    url: str
    stderr_path: Path

    @property
    def base(self) -> str:
        return self.url.removesuffix("/mcp")

    def stderr(self) -> str:
        return self.stderr_path.read_text()

    def access_lines(self) -> list[dict]:
        return [orjson.loads(line) for line in self.stderr().splitlines() if line.startswith("{")]

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.process.wait(timeout=timeout)


def start_http_server(
    cwd: Path, *options: str, env: dict[str, str] | None = None, wait: bool = True
) -> HttpServer:
    """Start the server (on an ephemeral loopback port unless `options` bind); its URL is read
    from its banner."""
    stderr_path = cwd.parent / f"{cwd.name}-server-{secrets.token_hex(3)}.stderr"
    bind = () if "--bind" in options else ("--bind", "127.0.0.1:0")
    with open(stderr_path, "w") as errlog:
        process = subprocess.Popen(
            [sys.executable, "-m", "premath", "mcp-serve", "--transport", "streamable-http",
             *bind, *options],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errlog,
            env=env if env is not None else server_env(),
        )  # fmt: skip
    server = HttpServer(process, "", stderr_path)
    if not wait:
        return server
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = re.search(r"listening: (http\S+/mcp)", server.stderr())
        if found:
            server.url = found.group(1)
            try:
                _wait_healthy(server)
            except BaseException:
                server.stop(signal.SIGKILL)
                raise
            return server
        if process.poll() is not None:
            raise AssertionError(f"server exited {process.returncode}: {server.stderr()}")
        time.sleep(0.05)
    server.stop(signal.SIGKILL)
    raise AssertionError(f"server did not start: {server.stderr()}")


def _wait_healthy(server: HttpServer) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx2.HTTPError):
            # the probe only waits for the listener; tests check certificates themselves
            probe = httpx2.get(f"{server.base}/healthz", timeout=5, verify=False)
            if probe.status_code == 200:
                return
        time.sleep(0.05)
    raise AssertionError(f"server never became healthy: {server.stderr()}")


@contextlib.contextmanager
def http_server(
    cwd: Path, *options: str, env: dict[str, str] | None = None
) -> Iterator[HttpServer]:
    server = start_http_server(cwd, *options, env=env)
    try:
        yield server
    finally:
        if server.process.poll() is None:
            server.stop(signal.SIGKILL)


def http_session(url: str, token: str | None):
    """The SDK's streamable HTTP client with `Authorization: Bearer <token>` (premath's own
    connect helper, the one remote workers use)."""
    return open_session(url, token, timeout_s=60.0)
