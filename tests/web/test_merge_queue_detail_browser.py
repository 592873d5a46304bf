"""The dashboard's issue detail in a real headless Chromium shows the merge queue's state of an
issue (specs/remote-workers.md "Merge queue"): a refused branch's failure class and conflicting
paths, a landed one's integration commit, and the state a queue still working on one reported
under the lease that holds it; the worker panel shows the queue in flight."""

import pytest

from premath.harness.merge_queue import Landing
from premath.models.merge_queue import QUEUE_STATE_KEY
from tests.support.browser import open_page
from tests.support.observation import issue, lease, sample_issues, seed_project, write_issues
from tests.support.serve import observe_serve

pytestmark = pytest.mark.timeout(180)

REFUSED = Landing(
    "premath/integration", "premath/bd-8", None, "a" * 40, "merge_conflict", "conflicts",
    conflict_paths=("shared.txt",),
)  # fmt: skip
LANDED = Landing("premath/integration", "premath/bd-9", "c" * 40, "b" * 40)


def _detail(page, issue_id: str) -> dict[str, str]:
    page.click(f'.issue[data-id="{issue_id}"]')
    page.wait_for_selector("#detail", state="visible")
    names = page.locator("#detail-fields dt").all_inner_texts()
    values = page.locator("#detail-fields dd").all_inner_texts()
    return dict(zip(names, values, strict=True))


def test_the_issue_detail_shows_the_queue_state_and_integration_commit(tmp_path, browser):
    seed_project(tmp_path)
    rows = sample_issues()
    rows.append(issue("bd-8", "refused by the queue", notes=REFUSED.note("w1", "s1")))
    rows.append(issue("bd-9", "landed", "closed", notes=LANDED.note("w2", "s2")))
    held = lease("bd-7", "w3", "2099-01-01T00:00:00Z")
    verifying = {
        "state": "verifying",
        "branch": "premath/bd-7",
        "integrationBranch": "premath/integration",
        "onto": "d" * 40,
        "step": "w3.bd-7.1",
        "leaseId": held["lease_id"],
    }
    rows.append(
        issue(
            "bd-7",
            "being verified on the integration head",
            "in_progress",
            assignee="w3",
            lease=held,
            notes=REFUSED.note("w3", "s0"),  # an earlier attempt's verdict, superseded
            metadata={QUEUE_STATE_KEY: verifying},
        )
    )
    write_issues(tmp_path, rows)
    with observe_serve(tmp_path, "--live") as server:
        url = f"http://127.0.0.1:{server.port}/dashboard"
        page, _ = open_page(browser, url, 1280, '.issue[data-id="bd-8"]')
        working = _detail(page, "bd-7")
        refused = _detail(page, "bd-8")
        landed = _detail(page, "bd-9")
        plain = _detail(page, "bd-1")
        # The worker panel shows the queue in flight, with the worker holding each issue...
        queue = page.wait_for_selector("#workers-queue", state="visible", timeout=10_000)
        in_flight = queue.inner_text()
        # ...and, pushed without a reload, nothing once the queue has decided.
        page.evaluate("window.__sameDocument = true")
        rows[-1] = issue("bd-7", "landed now", "closed", notes=LANDED.note("w3", "s3"))
        write_issues(tmp_path, rows)
        page.wait_for_selector("#workers-queue", state="hidden", timeout=20_000)
        assert page.evaluate("window.__sameDocument") is True
    assert in_flight == "Merge queue: bd-7 verifying premath/bd-7 onto dddddddddddd (w3)"
    assert (refused["merge queue"], refused["integration"]) == (
        "failed · merge_conflict (shared.txt)",
        "-",
    )
    assert (landed["merge queue"], landed["integration"]) == ("landed", "c" * 40)
    assert (working["merge queue"], working["integration"]) == (
        "verifying premath/bd-7 onto dddddddddddd",
        "-",
    )
    assert (plain["merge queue"], plain["integration"]) == ("-", "-")
