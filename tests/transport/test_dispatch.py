"""`premath transport-dispatch` / `transport-check`: our side of the divergences, the lease rules
through the transport, digests and exit codes."""

import pytest

from premath.transport import registry
from premath.transport.dispatch import default_fiber_id, fiber_witness_ref
from tests.cli.test_issue import FUTURE, ISSUES, PAST, lease, row, seed, stored


def dispatch(cli_run, action: str, payload: str):
    out = cli_run("transport-dispatch", "--action", action, "--payload", payload, "--json")
    assert (out.exit_code, out.stderr) == (0, "")
    return out.json


def test_registry_digests_are_the_references():
    report = registry.check_report()
    assert report["semanticDigest"] == (
        "ts1_79953e178a3f3e41c4c47f88db53135eae30a542ef31c36ccd167b0d6bb11f61"
    )
    claim = registry.ROUTES_BY_ACTION["issue.claim"]
    assert registry.dispatch_digest(claim.action, claim.action_id) == (
        "ts1_7012515c8279a81947b481e6e7acee0dbdde1662ac880ebadae8b5831f78e862"
    )
    assert registry.resolver_witness(claim)["semanticDigest"] == (
        "sr1_f93a12ce74f6c8e589cb9546bcd95457155ede3f01060ba84b7c89c5034e614f"
    )
    assert default_fiber_id("task://t", None) == "fib1_074aaaaca9c94212"
    assert fiber_witness_ref("fiber.cancel", "F 1").startswith(
        "fiber://dispatch/fiber.cancel/f_1/ts1_"
    )


def test_claim_next_takes_priority_first(cli_run, workdir):
    """D3-2 through the transport: bd-2 (priority 4) waits for bd-10 (priority 1)."""
    seed(workdir, row("bd-2", priority=4), row("bd-10", priority=1))
    first = dispatch(cli_run, "issue.claim_next", '{"assignee":"a"}')
    assert (first["result"], first["issue"]["id"]) == ("accepted", "bd-10")


def test_a_corrupt_store_is_store_io(cli_run, workdir):
    """D12-2: the class and line are the reference's, the JSON syntax text is orjson's."""
    (workdir / "bad.jsonl").write_text("{not json\n")
    out = dispatch(cli_run, "issue.claim_next", '{"assignee":"a","issuesPath":"bad.jsonl"}')
    assert out["failureClasses"] == ["lease_mutation_store_io"]
    assert out["diagnostic"].startswith("line 1: parse error: unexpected character")
    assert (workdir / "bad.jsonl").read_text() == "{not json\n"


def test_anyone_may_release_a_stale_lease(cli_run, workdir):
    """The runbook's stuck-worker recovery: a stale lease of a dead worker, released by another."""
    seed(
        workdir,
        row("bd-1", status="in_progress", assignee="dead", lease=lease("bd-1", "dead", PAST)),
    )
    out = dispatch(cli_run, "issue.lease_release", '{"id":"bd-1"}')
    assert (out["result"], out["changed"]) == ("accepted", True)
    assert stored(workdir)["bd-1"] == row("bd-1", updated_at="2026-03-01T10:00:00Z")
    # The CLI command keeps D3-3: only the holder of an active lease.
    seed(workdir, row("bd-1", status="in_progress", assignee="w", lease=lease("bd-1", "w", FUTURE)))
    refused = cli_run("issue", "lease-release", "bd-1", "--assignee", "x", "--json")
    assert refused.exit_code == 1


def test_renew_by_someone_else_is_refused_and_the_store_kept(cli_run, workdir):
    before = seed(
        workdir, row("bd-1", status="in_progress", assignee="w", lease=lease("bd-1", "w", FUTURE))
    )
    out = dispatch(
        cli_run, "issue.lease_renew", '{"id":"bd-1","assignee":"x","leaseId":"lease1_bd-1_w"}'
    )
    assert out["failureClasses"] == ["lease_owner_mismatch"]
    assert out["diagnostic"] == "lease owner mismatch for bd-1 (expected=w, got=x)"
    assert (workdir / ISSUES).read_bytes() == before


@pytest.mark.parametrize(
    ("payload", "diagnostic"),
    [
        (
            '["bd-1","alice"]',
            "invalid claim payload: invalid type: sequence, expected struct IssueClaimRequest",
        ),
        (
            '"bd-1"',
            'invalid claim payload: invalid type: string "bd-1", expected struct IssueClaimRequest',
        ),
        (
            '{"id":1,"assignee":"a"}',
            "invalid claim payload: invalid type: integer `1`, expected a string",
        ),
        (
            '{"id":"bd-1","assignee":"a","leaseTtlSeconds":1.5}',
            "invalid claim payload: invalid type: floating point `1.5`, expected i64",
        ),
    ],
)
def test_payloads_that_are_not_claim_requests_are_refused(cli_run, workdir, payload, diagnostic):
    """D12-1 (arrays) and serde type errors; no worldBinding or issuesPath on shape rejections."""
    before = seed(workdir, row("bd-1"))
    out = dispatch(cli_run, "issue.claim", payload)
    assert (out["failureClasses"], out["diagnostic"]) == (["lease_invalid_payload"], diagnostic)
    assert not {"worldBinding", "issuesPath"} & set(out)
    assert (workdir / ISSUES).read_bytes() == before


def test_unknown_action_has_no_resolver_fields(cli_run, workdir):
    out = dispatch(cli_run, "issue.delete", "{}")
    assert out["failureClasses"] == ["transport_unknown_action"]
    assert out["diagnostic"] == "unsupported transport action: issue.delete"
    assert "resolverWitness" not in out


@pytest.mark.parametrize(
    ("args"), [["--action", "  "], ["--action", "issue.claim", "--payload", "{nope"]]
)
def test_blank_action_or_bad_json_is_a_usage_error(cli_run, workdir, args):
    out = cli_run("transport-dispatch", *args, "--json")
    assert out.exit_code == 2
    assert out.json["error"]["code"] == "usage_error"


def test_transport_check_prints_struct_order(cli_run):
    out = cli_run("transport-check", "--json")
    assert out.exit_code == 0
    assert list(out.json)[:3] == ["schema", "checkKind", "registryKind"]
