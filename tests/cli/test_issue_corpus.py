"""The public CLI corpus for `premath issue`: every scenario passes but the declared divergences."""

from tests.support.corpus import assert_corpus

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
}


def test_issue_corpus_matches_the_reference_except_declared_divergences():
    assert_corpus("issue", DIVERGENT)
