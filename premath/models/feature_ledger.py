"""`premath.harness.feature_ledger.v1`: the feature ledger (specs/harness-feature-ledger.md).

Documents are plain dicts in the reference's field order with absent fields left out.
"""

from __future__ import annotations

from premath.models.serde import (
    checks_for,
    in_wire_order,
    optional_string,
    sequence,
    string,
    string_list,
    typed_fields,
    unsigned,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal

    FeatureStatus = Literal["pending", "in_progress", "blocked", "completed"]

LEDGER_SCHEMA = 1
LEDGER_KIND = "premath.harness.feature_ledger.v1"
CHECK_KIND = "premath.harness.feature_ledger.check.v1"
FEATURE_STATUSES: tuple[FeatureStatus, ...] = ("pending", "in_progress", "blocked", "completed")

LEDGER_ORDER = ("schema", "ledgerKind", "sessionRef", "updatedAt", "features")
ROW_ORDER = (
    "featureId",
    "status",
    "issueId",
    "summary",
    "instructionRefs",
    "verificationRefs",
    "updatedAt",
)
ROW_REF_LISTS = ("instructionRefs", "verificationRefs")


class LedgerHeaderInvalid(ValueError):
    """A ledger whose schema or kind is not the one this version reads."""


def row_in_field_order(fields: dict[str, Any]) -> dict[str, Any]:
    return in_wire_order(fields, ROW_ORDER, ROW_REF_LISTS)


def ledger_in_field_order(fields: dict[str, Any]) -> dict[str, Any]:
    """`features` is always written, even when empty; `sessionRef` only when present."""
    return in_wire_order({**fields, "features": fields.get("features", [])}, LEDGER_ORDER)


ROW_REQUIRED = ("featureId", "status", "updatedAt")
_ROW_CHECKS = {
    **checks_for(ROW_REQUIRED, string),
    **checks_for(("issueId", "summary"), optional_string),
    **checks_for(ROW_REF_LISTS, string_list),
}


def _parse_row(value: Any) -> dict[str, Any]:
    return row_in_field_order(typed_fields(value, "struct FeatureRow", _ROW_CHECKS, ROW_REQUIRED))


def _parse_rows(value: Any) -> list[dict[str, Any]]:
    return [_parse_row(row) for row in sequence(value)]


_LEDGER_CHECKS = {
    "schema": unsigned,
    **checks_for(("ledgerKind", "updatedAt"), string),
    "sessionRef": optional_string,
    "features": _parse_rows,
}


def parse_ledger(value: Any) -> dict[str, Any]:
    """Type-check a decoded ledger as serde does and validate its header (not its rows).

    Raises SchemaViolation (a parse error in the reference) or LedgerHeaderInvalid.
    """
    fields = typed_fields(
        value, "struct FeatureLedger", _LEDGER_CHECKS, ("schema", "ledgerKind", "updatedAt")
    )
    if fields["schema"] != LEDGER_SCHEMA:
        raise LedgerHeaderInvalid(f"invalid schema {fields['schema']} (expected 1)")
    if fields["ledgerKind"] != LEDGER_KIND:
        raise LedgerHeaderInvalid(
            f"invalid ledger kind {fields['ledgerKind']} (expected {LEDGER_KIND})"
        )
    return ledger_in_field_order(fields)
