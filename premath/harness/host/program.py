"""The `scheme-eval` request program and how each call's bindings resolve (§3.2)."""

from __future__ import annotations

from dataclasses import dataclass

from premath.harness.host.startup import StartupError
from premath.models.serde import (
    SchemaViolation,
    describe,
    optional_string,
    string_list,
    typed_fields,
    unsigned,
)
from premath.text import clean_optional, normalize_refs, rust_trim

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

REQUEST_KINDS = ("premath.scheme_eval.request.v0", "premath.rhai_eval.request.v0")
INVALID = "scheme_eval.invalid_program"


def _optional_strings(value: Any) -> list[str] | None:
    return None if value is None else string_list(value)


def _call_id(value: Any) -> str | None:
    return optional_string(value)


_CALL_FIELDS = {
    "callId": _call_id,
    "id": _call_id,
    "action": lambda value: optional_string(value) if value is not None else _missing_action(),
    "args": lambda value: value,
    "issueId": optional_string,
    "policyDigest": optional_string,
    "instructionRef": optional_string,
    "capabilityClaims": _optional_strings,
    "witnessRefs": _optional_strings,
    "lineageRefs": _optional_strings,
}


def _missing_action() -> str:
    raise SchemaViolation("invalid type: null, expected a string")


def _calls(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise SchemaViolation(f"invalid type: {describe(value)}, expected a sequence")
    calls = []
    for item in value:
        fields = typed_fields(item, "struct EvalCall", _CALL_FIELDS, ("action",))
        if "callId" in fields and "id" in fields:
            raise SchemaViolation("duplicate field `callId`")
        calls.append(fields)
    return calls


_PROGRAM_FIELDS = {
    "schema": lambda value: None if value is None else unsigned(value),
    "programKind": optional_string,
    "issueId": optional_string,
    "policyDigest": optional_string,
    "instructionRef": optional_string,
    "capabilityClaims": _optional_strings,
    "calls": _calls,
}


@dataclass(frozen=True)
class Bindings:
    """Defaults from the command line; each overrides the program's value."""

    issue_id: str | None = None
    policy_digest: str | None = None
    instruction_ref: str | None = None
    capability_claims: tuple[str, ...] = ()


@dataclass(frozen=True)
class Call:
    index: int
    call_id: str
    action: str
    args: Any
    issue_id: str | None
    policy_digest: str | None
    instruction_ref: str | None
    capability_claims: tuple[str, ...]
    witness_refs: tuple[str, ...]
    lineage_refs: tuple[str, ...]


@dataclass(frozen=True)
class Program:
    schema: int | None
    kind: str | None
    calls: tuple[Call, ...]


def parse_program(document: Any, cli: Bindings) -> Program:
    """The program with every call's bindings resolved; raises StartupError for a bad shape."""
    try:
        fields = typed_fields(document, "struct EvalProgram", _PROGRAM_FIELDS, ("calls",))
    except SchemaViolation as exc:
        raise StartupError(f"invalid evaluator program shape: {exc}", INVALID) from None
    program_claims = fields.get("capabilityClaims") or []
    calls = tuple(
        _resolve(index, raw, fields, cli, program_claims)
        for index, raw in enumerate(fields["calls"], start=1)
    )
    return Program(fields.get("schema"), fields.get("programKind"), calls)


def _first(*values: str | None) -> str | None:
    for value in values:
        cleaned = clean_optional(value)
        if cleaned is not None:
            return cleaned
    return None


def _resolve(
    index: int,
    raw: dict[str, Any],
    program: dict[str, Any],
    cli: Bindings,
    program_claims: list[str],
) -> Call:
    call_id = clean_optional(raw.get("callId", raw.get("id"))) or f"call-{index}"
    args = raw.get("args")
    claims = normalize_refs(
        [*program_claims, *cli.capability_claims, *(raw.get("capabilityClaims") or [])]
    )
    return Call(
        index=index,
        call_id=call_id,
        action=rust_trim(raw["action"]),
        args={} if args is None else args,
        issue_id=_first(raw.get("issueId"), cli.issue_id, program.get("issueId")),
        policy_digest=_first(
            raw.get("policyDigest"), cli.policy_digest, program.get("policyDigest")
        ),
        instruction_ref=_first(
            raw.get("instructionRef"), cli.instruction_ref, program.get("instructionRef")
        ),
        capability_claims=tuple(claims),
        witness_refs=tuple(normalize_refs(raw.get("witnessRefs") or [])),
        lineage_refs=tuple(normalize_refs(raw.get("lineageRefs") or [])),
    )


def check_program(program: Program, max_calls: int) -> None:
    """The checks after the contract is read, in the reference's order (§3.3 steps 6-10)."""
    if not program.calls:
        raise StartupError("program must include at least one call", INVALID)
    if max_calls <= 0:
        raise StartupError("--max-calls must be greater than zero", INVALID)
    if len(program.calls) > max_calls:
        raise StartupError(
            f"program call count {len(program.calls)} exceeds max_calls {max_calls}",
            "scheme_eval.call_budget_exceeded",
        )
    if program.schema is not None and program.schema != 1:
        raise StartupError(f"unsupported program schema: {program.schema}", INVALID)
    kind = clean_optional(program.kind)
    if kind is not None and kind not in REQUEST_KINDS:
        raise StartupError(f"unsupported program kind: {program.kind}", INVALID)
