"""`instruction-witness`: the `ci.instruction.v1` witness of a run (agent-surface.md §4.7).

The runtime file says what ran; the envelope says what was asked. Normal mode validates the
envelope; pre-execution mode records a reject before anything ran, reading the envelope only
as far as it parses. `write_witness` stores the witness where the MCP gate reads it.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson

from premath.errors import IoFailure, RuleRefused
from premath.harness.instruction.envelope import (
    parse_envelope,
    read_envelope_bytes,
    resolve_under_root,
    validate_envelope,
)
from premath.harness.instruction.errors import InstructionError
from premath.models.instruction_witness import (
    WITNESS_DIR,
    InstructionClassification,
    InstructionWitness,
    witness_path,
)
from premath.models.serde import (
    U64_MAX,
    SchemaViolation,
    describe,
    expect_object,
    require,
    sequence,
    string,
    unsigned,
)
from premath.store.atomic import write_atomic
from premath.store.canonical import document_bytes
from premath.store.documents import (
    DocumentMalformed,
    DocumentUnreadable,
    os_error_text,
    read_document,
)
from premath.store.locks import artifact_lock, lock_timeout_from_env
from premath.store.witness_mac import (
    ensure_keyring,
    read_private,
    sidecar_bytes,
    sidecar_path,
)
from premath.text import rust_trim

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RUNTIME_INVALID = "instruction_runtime_invalid"
RUNTIME_STRINGS = (
    "instructionId",
    "instructionRef",
    "instructionDigest",
    "squeakSiteProfile",
    "runStartedAt",
    "runFinishedAt",
)
I64 = (-(2**63), 2**63 - 1)


def _i64(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SchemaViolation(f"invalid type: {describe(value)}, expected i64")
    if not I64[0] <= value <= I64[1]:
        raise SchemaViolation(f"invalid value: {describe(value)}, expected i64")
    return value


def _result(value: Any) -> dict[str, Any]:
    row = expect_object(value, "struct ExecutedInstructionCheck")
    return {
        "checkId": string(require(row, "checkId")),
        "status": string(require(row, "status")),
        "exitCode": _i64(require(row, "exitCode")),
        "durationMs": unsigned(require(row, "durationMs"), U64_MAX, "u64"),
    }


def parse_runtime(value: Any) -> dict[str, Any]:
    """The runtime struct as serde reads it (every field required); raises SchemaViolation."""
    document = expect_object(value, "struct InstructionWitnessRuntime")
    runtime: dict[str, Any] = {name: string(require(document, name)) for name in RUNTIME_STRINGS}
    runtime["runDurationMs"] = unsigned(require(document, "runDurationMs"), U64_MAX, "u64")
    runtime["results"] = [_result(item) for item in sequence(require(document, "results"))]
    return runtime


def read_runtime(path: str) -> dict[str, Any]:
    try:
        return parse_runtime(read_document(path))
    except DocumentUnreadable as exc:
        raise InstructionError(
            RUNTIME_INVALID, f"failed to read runtime file {path}: {exc.detail}"
        ) from None
    except (DocumentMalformed, SchemaViolation) as exc:
        raise InstructionError(
            RUNTIME_INVALID, f"failed to parse runtime json {path}: {exc}"
        ) from None


def _non_empty(value: str, label: str) -> str:
    trimmed = rust_trim(value)
    if not trimmed:
        raise InstructionError(RUNTIME_INVALID, f"{label} must be a non-empty string")
    return trimmed


def _runtime_fields(runtime: dict[str, Any]) -> dict[str, Any]:
    fields = {name: _non_empty(runtime[name], name) for name in RUNTIME_STRINGS}
    return {**fields, "runDurationMs": runtime["runDurationMs"]}


def typed_core_projection_digest(instruction_digest: str, normalizer: str, policy: str) -> str:
    """`ev1_` + sha256 over the three parts, each terminated by NUL (§4.7)."""
    import hashlib

    digest = hashlib.sha256()
    for part in (instruction_digest, normalizer, policy):
        digest.update(part.encode("utf-8") + b"\x00")
    return "ev1_" + digest.hexdigest()


def _sorted_unique(values: list[str]) -> list[str]:
    return sorted({trimmed for trimmed in map(rust_trim, values) if trimmed})


def _witness(
    fields: dict[str, Any], normalizer: str | None, policy: str | None, **rest: Any
) -> InstructionWitness:
    digest = fields["instructionDigest"]
    projection = (
        typed_core_projection_digest(digest, normalizer, policy)
        if normalizer is not None and policy is not None
        else None
    )
    return InstructionWitness.model_validate(
        {
            **fields,
            "normalizerId": normalizer,
            "policyDigest": policy,
            "typedCoreProjectionDigest": projection,
            "authorityPayloadDigest": digest,
            **rest,
        }
    )


def build_witness(checked: dict[str, Any], runtime: dict[str, Any]) -> InstructionWitness:
    """Normal mode: the verdict follows the execution decision, then the checks' exit codes."""
    fields = _runtime_fields(runtime)
    results = runtime["results"]
    decision = checked["executionDecision"]
    if decision["state"] == "execute":
        failed = any(row["exitCode"] != 0 for row in results)
        verdict = "rejected" if failed else "accepted"
        operational, semantic = (["check_failed"] if failed else []), []
    else:
        verdict = "rejected"
        operational = decision["operationalFailureClasses"]
        semantic = decision["semanticFailureClasses"]
    operational, semantic = _sorted_unique(operational), _sorted_unique(semantic)
    proposal = checked.get("proposal")
    ingest = None
    if proposal is not None:
        canonical = proposal["canonical"]
        ingest = {
            "state": "typed",
            "kind": f"proposal.{canonical['proposalKind']}",
            "proposalDigest": proposal["digest"],
            "proposalKcirRef": proposal["kcirRef"],
            "binding": canonical["binding"],
            "targetCtxRef": canonical["targetCtxRef"],
            "targetJudgment": canonical["targetJudgment"],
            "obligations": proposal["obligations"],
            "discharge": proposal["discharge"],
        }
    return _witness(
        fields,
        checked["normalizerId"],
        checked["policyDigest"],
        instructionClassification=checked["instructionClassification"],
        typingPolicy=checked["typingPolicy"],
        intent=checked["intent"],
        scope=checked["scope"],
        capabilityClaims=checked["capabilityClaims"],
        requiredChecks=checked["requestedChecks"],
        executedChecks=[row["checkId"] for row in results],
        results=results,
        verdictClass=verdict,
        operationalFailureClasses=operational,
        semanticFailureClasses=semantic,
        failureClasses=_sorted_unique(operational + semantic),
        proposalIngest=ingest,
    )


def _trimmed_or_none(value: Any) -> str | None:
    return rust_trim(value) or None if isinstance(value, str) else None


def _string_items(value: Any) -> list[str]:
    items = value if isinstance(value, list) else []
    return _sorted_unique([item for item in items if isinstance(item, str)])


def build_pre_execution_witness(
    envelope: Any, runtime: dict[str, Any], failure_class: str, reason: str
) -> InstructionWitness:
    """Pre-execution mode: a rejected witness from whatever the envelope holds."""
    fields = _runtime_fields(runtime)
    failure_class = _non_empty(failure_class, "failureClass")
    reason = _non_empty(reason, "reason")
    root = envelope if isinstance(envelope, dict) else {}
    typing = root.get("typingPolicy")
    allow = typing.get("allowUnknown") if isinstance(typing, dict) else None
    return _witness(
        fields,
        _trimmed_or_none(root.get("normalizerId")),
        _trimmed_or_none(root.get("policyDigest")),
        instructionClassification=InstructionClassification(
            state="unknown", reason="pre_execution_invalid"
        ),
        typingPolicy={"allowUnknown": allow if isinstance(allow, bool) else False},
        intent=_trimmed_or_none(root.get("intent")) or "(invalid envelope)",
        scope=root.get("scope"),
        capabilityClaims=_string_items(root.get("capabilityClaims")),
        requiredChecks=_string_items(root.get("requestedChecks")),
        verdictClass="rejected",
        operationalFailureClasses=[failure_class],
        failureClasses=[failure_class],
        rejectStage="pre_execution",
        rejectReason=reason,
    )


def instruction_witness(
    instruction: str,
    runtime_path: str,
    repo_root: str,
    pre_execution_failure_class: str | None = None,
    pre_execution_reason: str | None = None,
) -> InstructionWitness:
    """`instruction-witness`: the witness of an envelope and a runtime file (bad input: exit 2)."""
    path = resolve_under_root(repo_root, instruction)
    runtime_file = resolve_under_root(repo_root, runtime_path)
    pre_execution = pre_execution_failure_class is not None or pre_execution_reason is not None
    if not pre_execution:
        data = read_envelope_bytes(path)
        runtime = read_runtime(runtime_file)
        checked = validate_envelope(parse_envelope(path, data), path, repo_root)
        return build_witness(checked, runtime)
    if pre_execution_failure_class is None:
        raise InstructionError(
            RUNTIME_INVALID,
            "preExecutionFailureClass is required when preExecutionReason is provided",
        )
    if pre_execution_reason is None:
        raise InstructionError(
            RUNTIME_INVALID,
            "preExecutionReason is required when preExecutionFailureClass is provided",
        )
    try:
        envelope = parse_envelope(path, read_envelope_bytes(path))
    except InstructionError:
        envelope = None
    runtime = read_runtime(runtime_file)
    return build_pre_execution_witness(
        envelope, runtime, pre_execution_failure_class, pre_execution_reason
    )


def verdict_text(title: str, document: dict[str, Any], *extra: str) -> str:
    """The text mode of a witness-shaped document: id, verdict, failure classes."""
    classes = document["failureClasses"]
    return "\n".join(
        [
            f"premath {title}",
            f"  Instruction ID: {document['instructionId']}",
            f"  Verdict: {document['verdictClass']}",
            f"  Failure Classes: {', '.join(classes) if classes else '(none)'}",
            *extra,
        ]
    )


def witness_text(document: dict[str, Any]) -> str:
    return verdict_text("instruction-witness", document)


def write_witness(
    repo_root: Path,
    witness: InstructionWitness,
    *,
    run_id: str,
    keep_accepted: bool = False,
    key_file: str | None = None,
) -> Path:
    """Store the witness at `artifacts/ciwitness/<instructionId>.json`, atomically, and its MAC
    beside it (`<id>.json.mac`, D22-3), both under the witness's lock. With `keep_accepted` an
    accepted witness already there (another run's) is never replaced: RuleRefused instead."""
    if os.sep in witness.instruction_id or witness.instruction_id in ("", ".", ".."):
        raise InstructionError(
            RUNTIME_INVALID,
            f"instructionId {witness.instruction_id!r} cannot name a witness file",
        )
    target = witness_path(repo_root, witness.instruction_id)
    data = document_bytes(witness.to_document())
    key = ensure_keyring(key_file).signing
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with artifact_lock(target, lock_timeout_from_env()):
            if keep_accepted:
                refuse_accepted_overwrite(target)
            write_atomic(target, data)
            write_atomic(sidecar_path(target), sidecar_bytes(key, run_id, data))
    except OSError as exc:
        raise IoFailure(
            f"failed to write instruction witness {target}: {os_error_text(exc)}; "
            f"{WITNESS_DIR} must be a writable directory"
        ) from None
    return target


def refuse_accepted_overwrite(target: Path) -> None:
    """RuleRefused when `target` holds an accepted witness: an instruction's accepted witness
    belongs to the run that wrote it, and a later run (even a failing one) must not replace it."""
    if not os.path.lexists(target):
        return
    try:
        document = orjson.loads(read_private(os.fspath(target), 4 * 1024 * 1024))
    except (OSError, orjson.JSONDecodeError):
        return
    if isinstance(document, dict) and document.get("verdictClass") == "accepted":
        relative = f"{WITNESS_DIR}/{target.name}"
        raise RuleRefused(
            "witness.overwrite_refused",
            f"{relative} already holds the accepted witness of another run; an accepted "
            "witness is never replaced: give the new run an envelope of its own "
            "(instructions/<ts>-<id>.json)",
        )
