from tests.support.corpus import assert_corpus

# Each fails only because, with --json, our errors also print {"error": ...} on stdout.
DIVERGENT = {
    "harness-trajectory.append.to-malformed-file": "D1-1",
    "harness-trajectory.append.validation-errors": "D1-1",
    "harness-trajectory.query.limit": "D1-1",
}


def test_trajectory_corpus_matches_the_reference_except_declared_divergences():
    assert_corpus("harness-trajectory", DIVERGENT)
