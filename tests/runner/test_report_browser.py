"""The HTML report rendered by a real headless Chromium (Playwright): it loads cleanly, on its
own, and shows its plots and task grid; a screenshot proves they are painted, not just present
in the DOM (kept as `<pytest base temp>/screenshots/report.png`)."""

import io
import os
from collections import Counter
from pathlib import Path

import pytest

from premath.runner.report.analysis import report_run
from premath.runner.runs import run_experiment
from tests.runner.conftest import make_experiment
from tests.support.browser import PageLog, chromium, require_browser, screenshot_folder

pytestmark = pytest.mark.timeout(120)

WIDTH, HEIGHT = 1280, 900
BLUE, ORANGE = (0x1D, 0x4E, 0xD8), (0xC2, 0x41, 0x0C)  # whiskers, estimates
WIN, LOSS = (0xDC, 0xFC, 0xE7), (0xFE, 0xE2, 0xE2)  # grid cell backgrounds


def _tasks() -> list[dict[str, object]]:
    """Eight tasks: fast loses 0-2 and wins 7; slow times out on task 3 (an error class)."""
    tasks = []
    for i in range(8):
        modes = {
            "control": "fail" if i == 7 else "ok",
            "fast": "fail" if i < 3 else "ok",
            "slow": "exit3" if i == 3 else "ok",
            "dead": "harness_error",
        }
        tasks.append({"id": f"task-{i}", "mode": "by_variant", "modes": modes})
    return tasks


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from datetime import UTC, datetime

    from premath.clock import FrozenClock

    root = tmp_path_factory.mktemp("browser")
    experiment = make_experiment(
        root / "exp",
        _tasks(),
        variants=[
            {"variant_id": name, "args": ["--variant", name]} for name in ("fast", "slow", "dead")
        ],
        design={"replications": 2},
        concurrency=4,
    )
    clock = FrozenClock(datetime(2026, 3, 1, 10, 0, 0, tzinfo=UTC))
    runs = os.fspath(root / "runs")
    run_experiment(os.fspath(experiment), clock=clock, lock_timeout=5.0, run_id="b1", runs_dir=runs)
    html_path = root / "pages" / "report.html"
    html_path.parent.mkdir()
    report_run("b1", runs_dir=runs, resamples=500, html_path=os.fspath(html_path))
    return html_path


@pytest.fixture(scope="module")
def binary() -> str:
    return require_browser()


@pytest.fixture
def tab(binary):
    """A fresh page at the report's width, logging what it does."""
    with chromium(binary) as browser:
        page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
        log = PageLog()
        log.watch(page)
        yield page, log


def test_the_page_loads_alone_without_console_errors(page, tab):
    browser, log = tab
    browser.goto(page.as_uri())
    assert log.console == []
    assert log.errors == []
    assert log.requests == [page.as_uri()]  # self-contained: nothing else is fetched


def test_grid_plots_and_sections_are_present_and_fit(page, tab):
    browser, _ = tab
    browser.goto(page.as_uri())
    rows = browser.evaluate("document.querySelectorAll('#task-grid tbody tr').length")
    verdicts = browser.evaluate(
        "Array.from(document.querySelectorAll('#task-grid td.cell'))"
        ".map(td => td.classList[1] || (td.cellIndex === 1 ? 'baseline' : 'none'))"
    )
    hrefs = browser.evaluate(
        "Array.from(document.querySelectorAll('#task-grid a')).map(a => a.href)"
    )
    plots = browser.evaluate(
        "['pass-rate-plot', 'difference-plot'].map(id => {"
        "  const svg = document.getElementById(id); const box = svg.getBoundingClientRect();"
        "  const texts = Array.from(svg.querySelectorAll('text'));"
        "  return {width: box.width, height: box.height, right: box.right,"
        "    dots: svg.querySelectorAll('circle').length,"
        "    clipped: texts.filter(t => { const b = t.getBBox();"
        "      return b.x < 0 || b.x + b.width > svg.width.baseVal.value; }).length,"
        "    labels: texts.map(t => t.textContent)}; })"
    )
    sections = browser.evaluate(
        "Array.from(document.querySelectorAll('h2')).map(h => h.textContent)"
    )
    metadata = browser.evaluate(
        "Array.from(document.querySelectorAll('#run-metadata dt')).map(d => d.textContent)"
    )
    errors = browser.evaluate("document.getElementById('error-table').innerText")
    tests = browser.evaluate(
        "Array.from(document.querySelectorAll('#comparison-table tbody tr'))"
        ".map(tr => tr.cells[4].textContent + ' ' + tr.cells[5].textContent)"
    )
    assert rows == 8
    # fast loses tasks 0-2 (control 2/2, fast 0/2), ties 3-6 and wins task 7 (control fails
    # it); slow ties six, wins task 7 and has no judged trial of task 3 (two errors), so no
    # verdict there; dead has none anywhere.
    assert Counter(verdicts) == {"baseline": 8, "tie": 4 + 6, "loss": 3, "win": 2, "none": 1 + 8}
    assert len(hrefs) == 8 * 4 * 2
    assert all(Path(href.removeprefix("file://")).is_dir() for href in hrefs)
    pass_rates, differences = plots
    assert pass_rates["dots"] == 3  # dead has no judged trial: a "no data" row instead
    assert differences["dots"] == 2
    for plot in plots:
        assert plot["width"] > 400
        assert plot["height"] > 100
        assert plot["right"] <= WIDTH
        assert plot["clipped"] == 0
    assert "pass rate (mean of per-task rates), 95% Wilson interval" in pass_rates["labels"]
    assert {"0%", "50%", "100%"} <= set(pass_rates["labels"])
    assert {"-100%", "0%", "+100%"} <= set(differences["labels"])
    assert "dead - control" in differences["labels"]
    assert "no data (\u2013)" in differences["labels"]
    assert sections == [
        "Pass rate per variant",
        "Against control",
        "Errors by class",
        "Tasks",
        "Method",
    ]
    assert metadata == [
        "experiment",
        "run",
        "commit",
        "seed",
        "schedule",
        "executor",
        "started",
        "finished",
        "trials",
    ]
    assert "slow\tharness_exit_nonzero\t2" in errors
    assert "dead\tresult_error\t16" in errors or "dead\tharness_error\t16" in errors
    assert tests == [
        "exact sign test (McNemar) 0.625",
        "exact sign test (McNemar) 1.000",
        "\u2013 \u2013",
    ]


def test_screenshot_shows_the_plots_and_the_grid_colours(page, tab, tmp_path_factory):
    image_module = pytest.importorskip("PIL.Image", reason="Pillow is in the test extra")
    browser, _ = tab
    browser.goto(page.as_uri())
    png = browser.screenshot(full_page=True)
    (screenshot_folder(tmp_path_factory) / "report.png").write_bytes(png)
    image = image_module.open(io.BytesIO(png)).convert("RGB")
    width, height = image.size
    assert width == WIDTH
    assert height > HEIGHT  # the whole page, not only the viewport
    colours = Counter({colour: count for count, colour in image.getcolors(1 << 24)})
    assert colours[BLUE] > 200  # CI whiskers in both plots
    assert colours[ORANGE] > 100  # estimate dots
    assert colours[WIN] > 500  # highlighted grid cells
    assert colours[LOSS] > 500
    assert len(colours) > 50  # text is drawn (anti-aliased), not a blank page
