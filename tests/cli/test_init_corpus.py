"""The public CLI corpus for `premath init`: every scenario passes but the declared divergences."""

from tests.support.corpus import assert_corpus

DIVERGENT = {
    "init.layout.legacy-beads": "D3-6",  # our behaviour: tests/issues/test_init_layout.py
    "init.layout.path-arg-and-errors": "D1-1",
}


def test_init_corpus_matches_the_reference_except_declared_divergences():
    assert_corpus("init", DIVERGENT)
