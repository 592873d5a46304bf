"""Blank optional strings are absent, as the reference reads them (its `non_empty`).

Corpus-style: the reference's own transport-dispatch and scheme-eval scenarios, with every
optional string they leave out added as a blank (`"  "`, `""`, `"\\t"`), must still give the
reference's recordings (or, for a scenario with a declared divergence, our own run of the
unchanged scenario). The reference was found accepting a claim whose `leaseExpiresAt` is blank
beside `leaseTtlSeconds` that premath refused; these runs pin every such field.
"""

import copy
import json
from datetime import UTC, datetime
from itertools import cycle

import pytest

from tests.cli.test_scheme_eval_corpus import JSON_ERRORS, LISTED_LEASES
from tests.cli.test_transport_corpus import DIVERGENT_DISPATCH
from tests.support.corpus import CLI_CORPUS, _diffrun, corpus_scenarios, record

BLANKS = ("  ", "", "\t")
TRANSPORT_OPTIONAL = {  # agent-surface.md §2.5: the optional strings of each payload
    "issue.claim": ("leaseId", "leaseExpiresAt", "issuesPath"),
    "issue.claim_next": ("leaseId", "issuesPath"),
    "issue.lease_renew": ("leaseExpiresAt", "issuesPath"),
    "issue.lease_release": ("assignee", "leaseId", "issuesPath"),
    "fiber.spawn": ("fiberId", "parentFiberId", "scopeRef"),
    "fiber.join": ("resultRef",),
    "fiber.cancel": ("reason",),
}
PROGRAM_OPTIONAL = ("programKind", "issueId", "policyDigest", "instructionRef")
CALL_OPTIONAL = ("issueId", "policyDigest", "instructionRef")


def _with_blanks(document: dict, fields: tuple[str, ...], blanks) -> int:
    added = 0
    for field in fields:
        if field not in document:
            document[field] = next(blanks)
            added += 1
    return added


def blank_transport(scenario: dict) -> int:
    """Every dispatch step's payload gets its absent optional strings as blanks."""
    blanks, added = cycle(BLANKS), 0
    for step in scenario["steps"]:
        argv = step["argv"]
        if argv[:1] != ["transport-dispatch"] or "--payload" not in argv:
            continue
        action = argv[argv.index("--action") + 1].strip()
        at = argv.index("--payload") + 1
        payload = json.loads(argv[at])
        if action in TRANSPORT_OPTIONAL and isinstance(payload, dict):
            added += _with_blanks(payload, TRANSPORT_OPTIONAL[action], blanks)
            argv[at] = json.dumps(payload)
    return added


def blank_programs(scenario: dict) -> int:
    """Every program file gets its absent program- and call-level optional strings as blanks
    (args are left alone: they are digested into `argsDigest`, see test_host_blank_args)."""
    blanks, added = cycle(BLANKS), 0
    for name, text in scenario.get("files", {}).items():
        try:
            program = json.loads(text)
        except ValueError:
            continue
        if not isinstance(program, dict) or not isinstance(program.get("calls"), list):
            continue
        added += _with_blanks(program, PROGRAM_OPTIONAL, blanks)
        for call in program["calls"]:
            if isinstance(call, dict):
                added += _with_blanks(call, CALL_OPTIONAL, blanks)
                if "id" not in call:
                    added += _with_blanks(call, ("callId",), blanks)
        scenario["files"][name] = json.dumps(program)
    return added


def _as_given(actual: dict, expected: dict, scenario: dict) -> dict:
    """`actual` with what we changed on purpose (argv, seeded program files) put back."""
    for ours, theirs in zip(actual["steps"], expected["steps"], strict=False):
        ours["argv"] = theirs["argv"]
    for name in scenario.get("files", {}):
        if name in expected["files"]:
            actual["files"][name] = expected["files"][name]
    return actual


def _difference_of_run(blanked: dict, expected: dict, scenario: dict) -> str | None:
    """How our run of `blanked` first differs from `expected` (None: it does not)."""

    def difference(actual: dict) -> str | None:
        return _diffrun().first_difference(expected, _as_given(actual, expected, scenario))

    return difference(record(blanked, lambda actual: difference(actual) is None))


@pytest.fixture(autouse=True)
def short_lock_wait(monkeypatch):
    monkeypatch.setenv("PREMATH_LOCK_TIMEOUT_SECONDS", "0.5")


@pytest.mark.parametrize(
    ("group", "blank", "divergent"),
    [
        ("transport-dispatch", blank_transport, DIVERGENT_DISPATCH),
        ("scheme-eval", blank_programs, JSON_ERRORS | LISTED_LEASES),
    ],
)
def test_corpus_scenarios_with_blank_optionals_give_the_same_recordings(group, blank, divergent):
    diffrun = _diffrun()
    problems, total = {}, 0
    for name in corpus_scenarios(group):
        scenario = diffrun.load_scenario(CLI_CORPUS / "scenarios" / f"{name}.json")
        blanked = copy.deepcopy(scenario)
        added = blank(blanked)
        if not added:
            continue
        total += added
        if name in divergent:
            expected = record(scenario, lambda _: False)  # a run within one second if it can
        else:
            expected = json.loads((CLI_CORPUS / "golden" / f"{name}.json").read_text())
        difference = _difference_of_run(blanked, expected, scenario)
        if difference is not None:
            problems[name] = difference
    assert total > 20, "the corpus should leave many optional strings out"
    assert problems == {}


def test_a_blank_expiry_beside_a_ttl_is_a_ttl_claim(tmp_path, monkeypatch):
    """The report that started this: the reference accepts it, premath refused it."""
    from premath.transport.dispatch import dispatch
    from tests.harness.loop_support import make_issues

    monkeypatch.chdir(tmp_path)
    make_issues(tmp_path, ["bd-1"])
    now = datetime(2026, 3, 1, tzinfo=UTC)
    payload = {"id": "bd-1", "assignee": "a", "leaseTtlSeconds": 300, "leaseExpiresAt": "  "}
    envelope = dispatch("issue.claim", payload, now=now, timeout_s=1.0)
    assert (envelope["result"], envelope["issue"]["lease"]["expiresAt"]) == (
        "accepted",
        "2026-03-01T00:05:00+00:00",
    )
    padded = {"id": "bd-1", "assignee": "a", "leaseExpiresAt": " 2099-01-01T00:00:00Z "}
    envelope = dispatch("issue.claim", padded, now=now, timeout_s=1.0)
    assert envelope["issue"]["lease"]["expiresAt"] == "2099-01-01T00:00:00+00:00"  # trimmed
