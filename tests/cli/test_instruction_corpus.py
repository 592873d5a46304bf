"""The public CLI corpus for `premath instruction-check` and `instruction-witness`."""

from tests.support.corpus import assert_corpus


def test_instruction_check_corpus_matches_the_reference():
    assert_corpus(
        "instruction-check",
        {
            "instruction-check.invalid.envelope-fields": "D1-1",
            "instruction-check.proposal.discharge": "D1-1",
        },
    )


def test_instruction_witness_corpus_matches_the_reference():
    assert_corpus(
        "instruction-witness",
        {
            "instruction-witness.errors.runtime-and-envelope": "D1-1",
            "instruction-witness.pre-execution.reject": "D1-1",
        },
    )
