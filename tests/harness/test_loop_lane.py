"""The worker lane's mutation authority (issue-memory-and-loops.md §B2; divergence D5-7)."""

import pytest

from premath.errors import InvalidUsage
from premath.harness.lane import resolve_mutation_authority


def test_default_mode_is_instruction_linked_and_accepted():
    authority = resolve_mutation_authority("", "")
    assert (authority.mode, authority.support_until) == ("instruction-linked", None)
    assert authority.describe() == (
        "mode=instruction-linked;reason=;active_epoch=2026-02;support_until=none"
    )


def test_human_override_needs_a_reason_and_carries_its_support_window():
    authority = resolve_mutation_authority("human-override", " ok ")
    assert (authority.reason, authority.support_until) == ("ok", "2026-06")
    with pytest.raises(InvalidUsage, match="requires a non-empty --override-reason"):
        resolve_mutation_authority("human-override", "  ")


def test_unknown_mode_is_refused():
    with pytest.raises(InvalidUsage, match="mutation mode 'yolo' is not allowed"):
        resolve_mutation_authority("yolo", "x")


@pytest.mark.parametrize(
    ("epoch", "allowed"), [("2026-06", True), ("2026-07", False), ("2027-01", False)]
)
def test_override_expires_after_its_support_epoch(epoch, allowed):
    if allowed:
        assert resolve_mutation_authority("human-override", "ok", epoch).active_epoch == epoch
    else:
        with pytest.raises(InvalidUsage, match="expired"):
            resolve_mutation_authority("human-override", "ok", epoch)


def test_cli_refuses_a_bad_mode_before_any_step(cli_run):
    result = cli_run(
        "harness-loop", "worker", "--worker-id", "w1", "--mutation-mode", "human-override", "--json"
    )
    assert result.exit_code == 2
    assert result.json["error"]["code"] == "usage_error"
    assert "requires a non-empty --override-reason" in result.stderr
