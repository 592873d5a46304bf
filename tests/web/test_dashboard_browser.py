"""The live dashboard in a real headless Chromium (Playwright) against `observe-serve --live`:
it loads with no console error and no request leaving loopback, shows the seeded issues (their
titles as text, never markup), and shows a new issue and a changed lease within 2 s without a
reload; it works from the keyboard and at phone width. Screenshots are kept as
`<pytest base temp>/screenshots/dashboard-1280.png` and `dashboard-390.png`."""

import io
import re
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.support.browser import PageLog, column_of, open_page, screenshot_folder
from tests.support.observation import issue, lease, sample_issues, seed_project, write_issues
from tests.support.serve import PUSH_BOUND_S, observe_serve

pytestmark = pytest.mark.timeout(180)

PUSH_BOUND_MS = int(PUSH_BOUND_S * 1000)
HOSTILE = '<img src=x onerror="window.__pwned = 1"><script>window.__pwned = 2</script>'


def _rows() -> list[dict]:
    rows = sample_issues()
    rows.append(issue("bd-6", HOSTILE, priority=0))
    return rows


@pytest.fixture
def project(tmp_path) -> Path:
    seed_project(tmp_path)
    write_issues(tmp_path, _rows())
    return tmp_path


def _open(browser, port: int, width: int):
    url = f"http://127.0.0.1:{port}/dashboard"
    return open_page(browser, url, width, '.issue[data-id="bd-1"]')


def test_the_dashboard_shows_the_store_and_follows_it_live(project, browser, tmp_path_factory):
    with observe_serve(project, "--live") as server:
        page, log = _open(browser, server.port, 1280)
        assert {
            issue_id: column_of(page, issue_id) for issue_id in ("bd-1", "bd-2", "bd-3", "bd-4")
        } == {"bd-1": "ready", "bd-2": "blocked", "bd-3": "in_progress", "bd-4": "closed"}
        assert page.inner_text("#card-state .value") == "accepted"
        assert page.inner_text("#card-wip .value") == "1/1/0"
        assert "bottleneck" in page.get_attribute('.issue[data-id="bd-3"]', "class")
        assert page.locator("#graph .node.bottleneck").count() == 1
        assert page.inner_text('.issue[data-id="bd-3"] .tag.lease').startswith("expires in")

        # A title is data: shown as text, never run or parsed as markup.
        assert page.inner_text('.issue[data-id="bd-6"] .title') == HOSTILE
        assert page.evaluate("window.__pwned") is None
        assert page.locator("main img, main script").count() == 0

        page.evaluate("window.__sameDocument = true")
        rows = _rows()
        rows.append(issue("bd-7", "Added while watching"))
        rows[2]["lease"] = lease("bd-3", "alice", "2026-02-22T00:30:00Z")  # now long expired
        write_issues(project, rows)
        started = time.monotonic()
        page.wait_for_selector('.issue[data-id="bd-7"]', timeout=PUSH_BOUND_MS)
        page.wait_for_selector('.issue[data-id="bd-3"] .tag.lease.stale', timeout=PUSH_BOUND_MS)
        assert time.monotonic() - started < PUSH_BOUND_MS / 1000
        assert page.evaluate("window.__sameDocument") is True  # pushed, not reloaded
        assert column_of(page, "bd-7") == "ready"

        folder = screenshot_folder(tmp_path_factory)
        png = page.screenshot(full_page=True)
        (folder / "dashboard-1280.png").write_bytes(png)
        _assert_painted(png, 1280)

        assert log.console == []
        assert log.errors == []
        assert log.requests
        assert {urlsplit(url).netloc for url in log.requests} == {f"127.0.0.1:{server.port}"}


def test_keyboard_search_filter_and_detail(project, browser):
    from playwright.sync_api import expect  # the browser fixture has checked it is installed

    with observe_serve(project, "--live") as server:
        page, log = _open(browser, server.port, 1280)
        page.keyboard.press("/")
        assert page.evaluate("document.activeElement.id") == "search"
        page.keyboard.type("in-flight")
        assert page.locator(".issue").count() == 1
        page.keyboard.press("Escape")
        assert page.locator(".issue").count() == 5
        page.keyboard.press("j")
        first = page.evaluate("document.activeElement.dataset.id")
        page.keyboard.press("j")
        second = page.evaluate("document.activeElement.dataset.id")
        assert first != second
        assert page.is_visible("#detail")
        assert page.inner_text("#detail-title").startswith(second + ": ")
        page.keyboard.press("l")
        moved = page.evaluate("document.activeElement.dataset.id")
        assert column_of(page, moved) != column_of(page, second)
        page.keyboard.press("Escape")
        assert not page.is_visible("#detail")
        page.select_option("#filter-assignee", "alice")
        assert [
            page.evaluate("el => el.dataset.id", card) for card in page.query_selector_all(".issue")
        ] == ["bd-3"]
        page.keyboard.press("f")
        assert page.is_checked("#failures-first")
        page.fill("#projection-digest", "ev1_missing")
        page.click("#projection-form button")
        expect(page.locator("#pane-projection")).to_have_text(re.compile(r"^404: ev1_missing"))
        assert log.errors == []


def test_the_dashboard_fits_a_phone(project, browser, tmp_path_factory):
    with observe_serve(project, "--live") as server:
        page, log = _open(browser, server.port, 390)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        widths = page.eval_on_selector_all(
            ".column", "columns => columns.map(c => c.getBoundingClientRect().width)"
        )
        assert all(width > 300 for width in widths)  # stacked, one per row
        png = page.screenshot(full_page=True)
        (screenshot_folder(tmp_path_factory) / "dashboard-390.png").write_bytes(png)
        _assert_painted(png, 390)
        assert log.console == []


def _assert_painted(png: bytes, width: int) -> None:
    image_module = pytest.importorskip("PIL.Image", reason="Pillow is in the test extra")
    image = image_module.open(io.BytesIO(png)).convert("RGB")
    assert image.size[0] == width
    colours = image.getcolors(1 << 24)
    assert colours is not None
    assert len(colours) > 50  # text and cards drawn, not a blank page


def test_one_process_a_person_logs_in_through_the_printed_link(project, browser, tmp_path_factory):
    """`mcp-serve --observe --live`: the dashboard refuses a browser without a login, opens
    through the link the server printed (once), shows an issue an agent adds over MCP within
    2 s without a reload, and logs out."""
    from concurrent.futures import ThreadPoolExecutor

    import anyio
    import httpx2

    from tests.mcp.client import call, http_server, http_session, new_token, token_file
    from tests.web.test_one_process import login_url

    token = new_token()
    path = token_file(project.parent, w1=token)
    options = ("--token-file", str(path), "--observe", "--live", "--mutation-policy", "open")
    with http_server(project, *options) as server:
        stranger = browser.new_context().new_page()
        refused = stranger.goto(f"{server.base}/dashboard")
        assert refused is not None
        assert refused.status == 401
        assert stranger.title() == "Log in · premath"
        assert stranger.locator("form input[name=token]").count() == 1
        assert stranger.locator(".issue").count() == 0

        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        log = PageLog()
        log.watch(page)
        page.goto(login_url(server))
        page.wait_for_url(f"{server.base}/dashboard", timeout=10_000)
        page.wait_for_selector('.issue[data-id="bd-1"]', timeout=10_000)
        assert page.inner_text("#viewer-name") == "Logged in as @console"
        page.evaluate("window.__sameDocument = true")

        async def add() -> str:
            async with http_session(server.url, token) as client:
                error, added = await call(client, "issue_add", {"title": "Added by an agent"})
                assert error is False, added
                return added["issue"]["id"]

        with ThreadPoolExecutor(1) as pool:  # Playwright's own loop runs in this thread
            added = pool.submit(anyio.run, add).result(timeout=60)
        started = time.monotonic()
        page.wait_for_selector(f'.issue[data-id="{added}"]', timeout=PUSH_BOUND_MS)
        assert time.monotonic() - started < PUSH_BOUND_MS / 1000
        assert page.evaluate("window.__sameDocument") is True  # pushed, not reloaded
        assert page.inner_text(f'.issue[data-id="{added}"] .title') == "Added by an agent"
        png = page.screenshot(full_page=True)
        (screenshot_folder(tmp_path_factory) / "dashboard-one-process.png").write_bytes(png)
        assert log.console == []
        assert log.errors == []
        assert {urlsplit(url).netloc for url in log.requests} == {urlsplit(server.base).netloc}

        again = stranger.goto(login_url(server))
        assert again is not None
        assert again.status == 401
        assert "used or has expired" in stranger.inner_text("body")

        # a session that ends elsewhere (logout in another tab, expiry, a restart): the page
        # says so and links to the login page
        minted = httpx2.post(
            f"{server.base}/login/code", headers={"Authorization": f"Bearer {token}"}, timeout=10
        ).json()
        other = browser.new_context().new_page()
        other.goto(minted["url"])
        other.wait_for_selector('.issue[data-id="bd-1"]', timeout=10_000)
        (cookie,) = other.context.cookies()
        assert (cookie["httpOnly"], cookie["sameSite"]) == (True, "Strict")
        ended = httpx2.post(
            f"{server.base}/logout", headers={"Cookie": f"{cookie['name']}={cookie['value']}"}
        )
        assert ended.status_code == 303
        other.wait_for_selector('#status a[href="login"]', timeout=PUSH_BOUND_MS)
        assert other.inner_text("#status").startswith("Logged out")

        page.click("#logout")
        page.wait_for_url(f"{server.base}/login", timeout=10_000)
        out = page.goto(f"{server.base}/dashboard")
        assert out is not None
        assert out.status == 401


def test_one_step_and_one_issue_read_as_such(tmp_path, browser):
    """Issue 35: "1 step", "1 issue"; the worker-lane card spelled out, not "WIP (w/i/u)"."""
    seed_project(tmp_path)
    write_issues(tmp_path, [issue("bd-1", "Only one")])
    appended = subprocess.run(
        [sys.executable, "-m", "premath", "harness-trajectory", "append", "--step-id", "w1.bd-1.1",
         "--issue-id", "bd-1", "--action", "harness.step", "--result-class", "completed"],
        cwd=tmp_path, capture_output=True, check=False,
    )  # fmt: skip
    assert appended.returncode == 0, appended.stderr
    with observe_serve(tmp_path, "--live") as server:
        page, log = _open(browser, server.port, 1280)
        page.wait_for_function(
            "document.getElementById('trajectory-note').textContent.includes('shown')"
        )
        assert page.inner_text("#trajectory-note").startswith("1 step, 0 failed, ")
        page.wait_for_function("document.getElementById('status').textContent.startsWith('Live')")
        assert page.inner_text("#status").endswith(" · 1 issue")
        label = page.inner_text("#card-wip .label")
        assert label == "Workers / in progress / unassigned"
        assert log.errors == []
