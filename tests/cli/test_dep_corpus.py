"""The public CLI corpus for `premath dep`: every scenario passes but the declared divergences."""

from tests.support.corpus import assert_corpus


def test_dep_corpus_matches_the_reference():
    # `issue list --json` items carry the lease (D25-1): tests/cli/test_issue_order.py
    assert_corpus(
        "dep", dict.fromkeys(["dep.add.touches-only-source", "dep.remove.and-errors"], "D25-1")
    )
