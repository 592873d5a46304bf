"""The dashboard tells the truth (issue 30) in a real headless Chromium against `observe-serve
--live`: escalations in a "needs a person" lane with an escalated mark, a card's retry state
("attempt 2 of 3"), the summary's live attention, the issue detail's *why* (open blockers,
notes, the last failure, its attempts and output tail read from the step record, the delivered
branch and commit), a failing step landing live, and the board before the summary on a phone.
Screenshots: `<pytest base temp>/screenshots/dashboard-truth-{1280,390}.png`."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest

from tests.support.browser import column_of, open_page, screenshot_folder
from tests.support.observation import blocks, issue, lease, write_issues, write_witnesses
from tests.support.serve import observe_serve

pytestmark = pytest.mark.timeout(180)

ESCALATION = "[HarnessEscalation] harness.loop retry exhausted (gate_timeout)"
STEP = "w1.bd-5.1"
OUTPUT = "AssertionError: expected 3, got 4\n"


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _row(step_id: str, issue_id: str, result_class: str, refs: list[str], at: datetime) -> dict:
    return {
        "schema": 1,
        "stepKind": "premath.harness.step.v1",
        "stepId": step_id,
        "issueId": issue_id,
        "action": "harness.step",
        "resultClass": result_class,
        "instructionRefs": [],
        "witnessRefs": refs,
        "lineageRefs": [],
        "finishedAt": _stamp(at),
    }


def _attempt(number: int, stderr: str) -> dict:
    return {
        "attempt": number,
        "commands": [
            {"name": "work", "status": "ok", "exitCode": 0, "stdoutPath": "/n/w.out"},
            {"name": "verify", "status": "exit_nonzero", "exitCode": 1, "stderrPath": stderr},
        ],
        "failureClasses": ["failed_verification"],
        "decision": {"attempt": number, "retry": number < 3, "maxAttempts": 3},
    }


@pytest.fixture
def project(tmp_path) -> Path:
    now = datetime.now(UTC)  # the real server's clock
    write_witnesses(tmp_path)
    write_issues(
        tmp_path,
        [
            issue("bd-1", "Plain work"),
            issue("bd-2", ESCALATION, priority=0),
            issue("bd-3", "Held by a dead worker", "in_progress", assignee="w9",
                  lease=lease("bd-3", "w9", _stamp(now - timedelta(minutes=5)))),
            issue("bd-4", "Delivered", "closed"),
            issue("bd-5", "Fails its check", dependencies=[blocks("bd-5", "bd-1")],
                  notes="tried twice; the check is flaky"),
            issue("bd-6", "Blocked by the loop", "blocked",
                  notes="[harness-escalation]\nscope: harness.loop\naction: mark_blocked"),
            issue("bd-7", "Blocked by a person", "blocked", notes="waiting on a vendor"),
        ],
    )  # fmt: skip
    # A failed step whose record names its output as the worker saw it (another node's path):
    # the detail reads it beside the record, here.
    folder = tmp_path / ".premath" / "harness_steps" / STEP
    (folder / "attempt-2").mkdir(parents=True)
    stderr = f"/elsewhere/.premath/harness_steps/{STEP}/attempt-2/verify.stderr"
    (folder / "attempt-2" / "verify.stderr").write_text("noise\n" * 2000 + OUTPUT)
    record = {"stepId": STEP, "attempts": [_attempt(1, "/x"), _attempt(2, stderr)]}
    (folder / "step.json").write_bytes(orjson.dumps(record))
    rows = [
        _row("w1.bd-4.1", "bd-4", "completed", ["git://premath/bd-4@c0ffee12"], now),
        _row(STEP, "bd-5", "failed_verification",
             [f".premath/harness_steps/{STEP}/step.json", "failure://failed_verification"], now),
    ]  # fmt: skip
    (tmp_path / ".premath" / "harness_trajectory.jsonl").write_bytes(
        b"".join(orjson.dumps(row) + b"\n" for row in rows)
    )
    return tmp_path


def _open(browser, port: int, width: int):
    url = f"http://127.0.0.1:{port}/dashboard"
    return open_page(browser, url, width, '.issue[data-id="bd-5"] .tag.retry')


def _why(page) -> dict[str, str]:
    page.wait_for_selector("#why-fields dt")
    names = page.locator("#why-fields dt").all_inner_texts()
    values = page.locator("#why-fields dd").all_inner_texts()
    return dict(zip(names, values, strict=True))


def test_the_dashboard_shows_what_needs_a_person_and_why(project, browser, tmp_path_factory):
    with observe_serve(project, "--live") as server:
        page, log = _open(browser, server.port, 1280)
        assert column_of(page, "bd-2") == "needs_person"
        assert column_of(page, "bd-6") == "needs_person"
        assert column_of(page, "bd-7") == "blocked"
        assert page.inner_text('.column[data-column="needs_person"] .count') == "2"
        assert (
            page.inner_text('.issue[data-id="bd-6"] .tag.escalated') == "blocked by an escalation"
        )
        assert page.inner_text('.issue[data-id="bd-2"] .tag.escalated') == (
            "escalated · needs a person"
        )
        assert page.inner_text('.issue[data-id="bd-5"] .tag.retry') == (
            "attempt 2 of 3 · failed_verification"
        )
        assert page.locator('.issue[data-id="bd-4"] .tag.retry').count() == 0
        assert page.inner_text("#card-attention .value") == "true"
        assert page.inner_text("#card-top-failure .value") == "failed_verification"
        assert page.inner_text("#card-claims .value") == "1/0"
        reasons = page.locator("#list-reasons li").all_inner_texts()
        assert reasons == ["stale_leases_now", "escalations_open"]

        page.click('.issue[data-id="bd-5"]')
        page.locator("#why-output", has_text="AssertionError").wait_for()
        why = _why(page)
        assert why["open blockers"] == "bd-1 (open)"
        assert why["failure class"] == "failed_verification"
        assert why["attempts"] == "attempt 2 of 3 · failed_verification"
        assert page.inner_text("#why-notes") == "tried twice; the check is flaky"
        tail = page.inner_text("#why-output")
        assert tail.rstrip().endswith(OUTPUT.strip())
        assert len(tail.encode()) <= 4096  # the tail, not the whole file
        assert page.inner_text("#why-output-name") == (
            f".premath/harness_steps/{STEP}/attempt-2/verify.stderr"
        )

        page.click('.issue[data-id="bd-4"]')
        page.locator("#why-fields", has_text="c0ffee12").wait_for()
        why = _why(page)
        assert (why["branch"], why["commit"]) == ("premath/bd-4", "c0ffee12")

        # A failing step lands: the card shows it without a reload.
        page.evaluate("window.__sameDocument = true")
        failed = _row("w2.bd-1.1", "bd-1", "gate_timeout", [], datetime.now(UTC))
        with (project / ".premath" / "harness_trajectory.jsonl").open("ab") as handle:
            handle.write(orjson.dumps(failed) + b"\n")
        page.wait_for_selector('.issue[data-id="bd-1"] .tag.retry', timeout=10_000)
        assert page.inner_text('.issue[data-id="bd-1"] .tag.retry') == "failed · gate_timeout"
        assert page.evaluate("window.__sameDocument") is True
        folder = screenshot_folder(tmp_path_factory)
        (folder / "dashboard-truth-1280.png").write_bytes(page.screenshot(full_page=True))
        assert log.errors == []
        assert log.console == []

        phone, log = _open(browser, server.port, 390)
        board = phone.eval_on_selector("#board-section", "node => node.getBoundingClientRect().top")
        cards = phone.eval_on_selector("#summary-section", "n => n.getBoundingClientRect().top")
        assert board < cards
        assert phone.evaluate("document.documentElement.scrollWidth") <= 390
        (folder / "dashboard-truth-390.png").write_bytes(phone.screenshot(full_page=True))
        assert log.errors == []
