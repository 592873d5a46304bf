"""The public CLI corpus for `premath scheme-eval`."""

from tests.support.corpus import assert_corpus


def test_scheme_eval_corpus_matches_the_reference():
    assert_corpus("scheme-eval", {"scheme-eval.errors.budget-and-shape": "D1-1"})
