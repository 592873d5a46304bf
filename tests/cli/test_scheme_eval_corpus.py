"""The public CLI corpus for `premath scheme-eval`.

Lease and fiber actions dispatch through the transport package (`transport-dispatch`); where
it is absent from the tree, the scenarios that route calls through it skip, naming it.
"""

import importlib.util

import pytest

from tests.support.corpus import assert_corpus, corpus_scenarios, run_scenario

ROUTED = {
    "scheme-eval.contract.custom-host-actions",
    "scheme-eval.fiber.actions",
    "scheme-eval.mutation.program-metadata",
}
JSON_ERRORS = {"scheme-eval.errors.budget-and-shape"}
# `issue.list` is `premath issue list --json`: its items carry the lease (D25-1).
LISTED_LEASES = {
    "scheme-eval.contract.custom-host-actions",
    "scheme-eval.mutation.program-metadata",
    "scheme-eval.read-only.queries",
}
HAVE_TRANSPORT = importlib.util.find_spec("premath.transport") is not None


def test_scheme_eval_corpus_matches_the_reference():
    if not HAVE_TRANSPORT:
        pytest.skip(f"premath.transport is not in this tree; {sorted(ROUTED)} need it")
    assert_corpus(
        "scheme-eval",
        {**dict.fromkeys(JSON_ERRORS, "D1-1"), **dict.fromkeys(LISTED_LEASES, "D25-1")},
    )


def test_local_scenarios_match_without_the_transport():
    for name in sorted(set(corpus_scenarios("scheme-eval")) - ROUTED - LISTED_LEASES):
        result = run_scenario(name)
        key = "difference_sans_json_errors" if name in JSON_ERRORS else "difference"
        assert result[key] is None, f"{name}: {result[key]}"
