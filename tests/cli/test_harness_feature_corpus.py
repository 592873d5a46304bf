from tests.support.corpus import assert_corpus

DIVERGENT = {
    "harness-feature.next.errors": "D1-1",
    "harness-feature.check.missing-file": "D1-1",
    "harness-feature.read.errors": "D1-1",
    "harness-feature.write.blank-feature-id": "D1-1",
    "harness-feature.write.existing-header-errors": "D1-1",
    "harness-feature.write.keeps-invalid-rows": "D2-11",
    "harness-feature.write.untrimmed-stored-id": "D2-11",
}


def test_feature_corpus_matches_the_reference_except_declared_divergences():
    assert_corpus("harness-feature", DIVERGENT)
