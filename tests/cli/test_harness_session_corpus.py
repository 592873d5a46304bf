from tests.support.corpus import assert_corpus

DIVERGENT = {
    "harness-session.bootstrap.missing-session": "D1-1",
    "harness-session.write.existing-invalid-state": "D1-1",
    "harness-session.write.existing-malformed": "D1-1",
    "harness-session.write.path-is-directory": "D1-1",
}


def test_session_corpus_matches_the_reference_except_declared_divergences():
    assert_corpus("harness-session", DIVERGENT)
