"""A real headless Chromium driven by Playwright: Debian's `/usr/bin/chromium`, never a browser
Playwright downloads, started offline (no sync, no component or safe-browsing updates).

Whether the browser tests can run is decided once, up front, by the optional-tool probes
(tests/support/optional_tools.py): Playwright importable and a Chromium binary that answers.
Absent either, they skip and say how to install it (`.ci/run` installs both and requires them).
The `browser` fixture (tests/conftest.py) yields one started browser; `open_page` opens a page
on a URL and waits for what the test needs first; `column_of` names the board column a card is in.
Screenshots the tests take are kept under `<pytest base temp>/screenshots/` (e.g.
`/tmp/pytest-of-$USER/pytest-N/screenshots/`), which pytest keeps for its last three runs.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support import optional_tools

# Quiet and offline: no sync, no component or safe-browsing updates, no first-run UI.
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-default-apps",
    "--hide-scrollbars",
]


def require_browser() -> str:
    """The Chromium binary, or skip the test saying what is missing and how to install it."""
    optional_tools.require(optional_tools.playwright())
    return optional_tools.require(optional_tools.chromium())


def screenshot_folder(factory: pytest.TempPathFactory) -> Path:
    folder = factory.getbasetemp() / "screenshots"
    folder.mkdir(exist_ok=True)
    return folder


@dataclass
class PageLog:
    """What a page did: console messages, uncaught exceptions, every request's URL."""

    console: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def watch(self, page: Any) -> None:
        page.on("console", lambda message: self.console.append(f"{message.type}: {message.text}"))
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.on("request", lambda request: self.requests.append(request.url))


@contextmanager
def chromium(binary: str) -> Iterator[Any]:
    """A Playwright Browser on `binary`, closed (with its profile) on exit."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=binary, args=FLAGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


def open_page(browser: Any, url: str, width: int, ready: str) -> tuple[Any, PageLog]:
    """A new page `width` pixels wide on `url`, its log watched, once `ready` (a selector) shows."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    log = PageLog()
    log.watch(page)
    page.goto(url)
    page.wait_for_selector(ready, timeout=10_000)
    return page, log


def column_of(page: Any, issue_id: str) -> str:
    """The board column (`needs_person`, `blocked`, `ready`, ...) the issue's card is in."""
    return str(
        page.eval_on_selector(
            f'.issue[data-id="{issue_id}"]', "card => card.closest('.column').dataset.column"
        )
    )
