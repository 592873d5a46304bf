"""10,000 concurrent requests against a real `premath observe-serve`: every one is answered
(no connection refused, reset or left hanging) and the server keeps serving (D21-8)."""

import asyncio
from collections import Counter

import pytest

from tests.support.cli import run_premath
from tests.support.observation import seed_project
from tests.support.serve import observe_serve

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

REQUESTS = 10_000


async def _one(port: int, gate: asyncio.Event) -> str:
    await gate.wait()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            b"GET /needs-attention HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        )
        await writer.drain()
        answer = await reader.read()
        writer.close()
        return answer.split(b" ", 2)[1].decode() if answer else "empty"
    except OSError as exc:
        return type(exc).__name__


async def _all(port: int) -> Counter[str]:
    gate = asyncio.Event()
    tasks = [asyncio.create_task(_one(port, gate)) for _ in range(REQUESTS)]
    await asyncio.sleep(0.1)
    gate.set()  # all at once
    return Counter(await asyncio.wait_for(asyncio.gather(*tasks), timeout=240))


def test_ten_thousand_concurrent_requests_are_all_answered(tmp_path):
    seed_project(tmp_path)
    assert run_premath("observe-build", cwd=tmp_path).returncode == 0
    with observe_serve(tmp_path) as server:
        outcomes = asyncio.run(_all(server.port))
        assert outcomes == {"200": REQUESTS}
        assert server.request("/healthz").status == 200
        assert "Traceback" not in server.stderr()
