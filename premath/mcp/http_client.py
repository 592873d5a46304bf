"""Connect to `mcp-serve --transport streamable-http` as its clients do (specs/mcp-http.md
"Connecting a client"): the SDK's streamable HTTP client with `Authorization: Bearer <token>`.
Tests and benchmarks use it; remote workers use the lean `premath.mcp.rpc_client` (issue 33)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

DEFAULT_TIMEOUT_S = 120.0


@contextlib.asynccontextmanager
async def open_session(
    url: str, token: str | None, *, timeout_s: float = DEFAULT_TIMEOUT_S
) -> AsyncIterator[ClientSession]:
    """An initialised MCP session with the server at `url` (`http[s]://HOST:PORT/mcp`); no
    header at all when `token` is None (the server then answers 401)."""
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(timeout_s)) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session
