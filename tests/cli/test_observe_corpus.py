"""The public CLI corpus for `premath observe-build` and `premath observe`."""

from tests.support.corpus import assert_corpus


def test_observe_build_corpus_matches_the_reference():
    assert_corpus(
        "observe-build",
        {
            "observe-build.errors.output-paths": "D21-1",
            "observe-build.paths.rebuild-existing": "D21-2",
            "observe-build.usage.flags": "D1-1",
        },
    )


def test_observe_corpus_matches_the_reference():
    assert_corpus(
        "observe",
        {
            "observe.instruction.lookup": "D1-1",
            "observe.projection.errors": "D1-1",
            "observe.surface.array-form": "D21-13",
            "observe.surface.load-errors": "D1-1",
        },
    )
