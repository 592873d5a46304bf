"""The public CLI corpus for `premath dep`: every scenario passes."""

from tests.support.corpus import assert_corpus


def test_dep_corpus_matches_the_reference():
    assert_corpus("dep", {})
