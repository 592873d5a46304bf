"""The public CLI corpus for `premath issue`: every scenario passes but the declared divergences."""

from tests.support.corpus import assert_corpus

# D25-1: `issue ready`/`list` in claim-next's order, `list --json` items with their lease
# (tests/cli/test_issue_order.py); D25-3: a new issue without acceptance or verification warns.
DIVERGENT = {
    "issue.add.explicit-and-errors": "D16-2",  # D1-1, and a warning for `--status weird`
    "issue.blocked.missing-file": "D1-1",
    "issue.check.missing-file": "D1-1",
    "issue.claim-next.errors": "D25-4",  # D1-1, and no .premath/ left by a refused claim
    "issue.claim-next.skips": "D3-1",  # our behaviour: tests/cli/test_issue_claim_next.py
    "issue.claim-next.ttl-bounds": "D1-1",
    "issue.claim.rejections": "D1-1",
    "issue.migrate-events.errors": "D1-1",
    "issue.replay-events.cache-miss": "D3-7",  # our behaviour: tests/issues/test_events.py
    "issue.ready.errors-and-empty": "D1-1",
    "issue.update.close-releases-lease": "D16-2",  # a warning for `--status IN_PROGRESS`
    "issue.add.auto-ids": "D25-1",  # and D25-3
    "issue.add.closed-and-text": "D25-3",
    "issue.discover.success": "D25-1",  # and D25-3
    "issue.list.filters": "D25-1",
    "issue.migrate-events.round-trip": "D25-1",
    "issue.ready.ordering-and-blocking": "D25-1",
    "issue.replay-events.cache": "D25-1",
    "issue.update.fields": "D25-1",
    "issue.update.notes-sources": "D25-1",
}


def test_issue_corpus_matches_the_reference_except_declared_divergences():
    assert_corpus("issue", DIVERGENT)
