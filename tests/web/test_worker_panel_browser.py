"""The dashboard's worker panel in a real headless Chromium against one `mcp-serve --observe
--live` process: workers register and heartbeat over MCP (the SDK's client, a real token), the
panel shows each with its node, issue, phase, attempt n of m, time since its last heartbeat,
steps, closes and pass rate; a worker that stops heartbeating is marked silent and one that
deregistered gone, without a reload; the `/workers` route answers the same; at phone width the
panel fits. Screenshots: `<pytest base temp>/screenshots/workers-1280.png`, `workers-390.png`."""

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import anyio
import httpx2
import pytest

from premath.record.trajectory import append_step
from tests.mcp.client import call, http_server, http_session, new_token, token_file
from tests.support.browser import open_page, screenshot_folder
from tests.support.observation import seed_project
from tests.web.test_one_process import login_url

pytestmark = pytest.mark.timeout(180)

NODE = "node-a/1f2e3d4c"


def steps_of(project) -> None:
    """Two steps of fleet.1 (one closed, one failed) in the authority's trajectory."""
    now = datetime.now(UTC)
    for index, (issue, result) in enumerate((("bd-1", "completed"), ("bd-2", "failed")), 1):
        append_step(
            project / ".premath" / "harness_trajectory.jsonl",
            step_id=f"fleet.1.{issue}.{index}",
            issue_id=issue,
            action="worker.loop",
            result_class=result,
            now=now,
            lock_timeout=5.0,
        )


def run_calls(url: str, token: str, calls: list[tuple[str, dict]]) -> None:
    async def scenario() -> None:
        async with http_session(url, token) as client:
            for name, arguments in calls:
                error, answer = await call(client, name, arguments)
                assert error is False, (name, answer)

    with ThreadPoolExecutor(1) as pool:  # Playwright's own loop runs in this thread
        pool.submit(anyio.run, scenario).result(timeout=60)


def cells(page, worker_id: str) -> list[str]:
    return page.eval_on_selector_all(
        f'#workers tr[data-worker="{worker_id}"] td', "tds => tds.map(td => td.textContent)"
    )


def test_the_worker_panel_shows_the_fleet_and_marks_silent_and_gone_workers(
    tmp_path, browser, tmp_path_factory
):
    project = tmp_path / "project"
    project.mkdir()
    seed_project(project)
    steps_of(project)
    token = new_token()
    path = token_file(tmp_path, fleet=token)
    register = {"heartbeatSeconds": 1, "premathVersion": "0.1.0", "pid": 4242}
    with http_server(project, "--token-file", str(path), "--observe", "--live") as server:
        run_calls(
            server.url,
            token,
            [
                ("harness_worker_register", {"workerId": "fleet.1", "node": NODE, **register}),
                ("harness_worker_register", {"workerId": "fleet.2", "node": NODE, **register}),
                ("harness_worker_deregister", {"workerId": "fleet.2", "reason": "drained"}),
                (
                    "harness_worker_heartbeat",
                    {
                        "workerId": "fleet.1",
                        "phase": "verifying",
                        "issueId": "bd-3",
                        "attempt": 2,
                        "maxAttempts": 3,
                    },
                ),
            ],
        )
        panel = '#workers tr[data-worker="fleet.1"]'
        page, log = open_page(browser, login_url(server), 1280, panel)
        page.evaluate("window.__sameDocument = true")
        row = cells(page, "fleet.1")
        assert row[:6] == ["fleet.1", NODE, "running", "bd-3", "verifying", "2 of 3"]
        assert row[6].endswith(" ago")
        assert row[7:] == ["2", "1", "50%"]
        assert cells(page, "fleet.2")[2] == "gone (drained)"
        assert "worker-gone" in page.get_attribute('tr[data-worker="fleet.2"]', "class")

        # fleet.1 stops heartbeating: after three intervals it is silent, pushed without reload.
        page.wait_for_selector('tr.worker-silent[data-worker="fleet.1"]', timeout=20_000)
        assert cells(page, "fleet.1")[2] == "silent"
        assert page.inner_text("#workers-note") == "0 running · 1 silent · 1 gone"
        folder = screenshot_folder(tmp_path_factory)
        (folder / "workers-1280.png").write_bytes(page.screenshot(full_page=True))

        # The same view over HTTP, with the attention reason a silent worker gives.
        answer = httpx2.get(
            f"{server.base}/workers", headers={"Authorization": f"Bearer {token}"}, timeout=30
        )
        assert answer.status_code == 200
        view = answer.json()
        assert [(w["workerId"], w["status"]) for w in view["workers"]] == [
            ("fleet.1", "silent"),
            ("fleet.2", "gone"),
        ]
        (reason,) = view["attentionReasons"]
        assert reason.startswith("worker fleet.1 is silent (no heartbeat for ")
        assert reason.endswith("s; last verifying on bd-3)")

        # It beats again: running, its new phase shown.
        run_calls(
            server.url,
            token,
            [("harness_worker_heartbeat", {"workerId": "fleet.1", "phase": "closing"})],
        )
        page.wait_for_selector('tr.worker-running[data-worker="fleet.1"]', timeout=10_000)
        assert cells(page, "fleet.1")[3:5] == ["-", "closing"]
        assert page.evaluate("window.__sameDocument") is True

        phone = browser.new_context(viewport={"width": 390, "height": 800}).new_page()
        phone.goto(login_url_again(server, token))
        phone.wait_for_selector('#workers tr[data-worker="fleet.1"]', timeout=10_000)
        assert phone.evaluate("document.documentElement.scrollWidth") <= 390
        (folder / "workers-390.png").write_bytes(phone.screenshot(full_page=True))
        assert log.errors == []
        assert log.console == []


def login_url_again(server, token: str) -> str:
    """A new one-time login link (the printed one is spent), asked for with the token."""
    answer = httpx2.post(
        f"{server.base}/login/code", headers={"Authorization": f"Bearer {token}"}, timeout=30
    )
    assert answer.status_code == 200, answer.text
    return answer.json()["url"]
