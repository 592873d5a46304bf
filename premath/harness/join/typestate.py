"""Normalised typestate evidence: trimmed, deduplicated, keyed rows and the derived join state.

Mirrors the reference's `normalize_typestate_evidence` (specs/join-check.md "Normalisation",
"Digests"). Each row surface becomes a map sorted by its key; rows are dicts in wire form (absent
optionals left out), so the digests hash exactly what is printed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from premath.harness.join.digests import digest, digest_string
from premath.lean import NamedTuple
from premath.models.join_check import (
    CALL_SPEC_FIELDS,
    DISPOSITIONS,
    NORMALIZED_KIND,
    REMINDER_QUEUE_FIELDS,
    SCHEMA,
    TOOL_RENDER_FIELDS,
)
from premath.text import clean_optional, normalize_refs, rust_trim

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    Row = dict[str, Any]


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


class EvidenceInvalid(ValueError):
    """Evidence that cannot be normalised; the message is the reference's (specs/join-check.md)."""


def ascii_lower(value: str) -> str:
    """Rust's `to_ascii_lowercase`: only A-Z change."""
    return value.translate(_ASCII_LOWER)


def clean_required(value: str, field: str) -> str:
    trimmed = rust_trim(value)
    if not trimmed:
        raise EvidenceInvalid(f"{field} must be non-empty")
    return trimmed


def _with_optionals(row: Row, source: Row, names: Iterable[str]) -> Row:
    for name in names:
        value = clean_optional(source[name])
        if value is not None:
            row[name] = value
    return row


def _keyed(surface: str, key: str, rows: Iterable[Row]) -> dict[str, Row]:
    """Rows by key, sorted; an identical repeat is dropped, a different one refused."""
    keyed: dict[str, Row] = {}
    for row in rows:
        previous = keyed.setdefault(row[key], row)
        if previous != row:
            raise EvidenceInvalid(
                f"{surface} contains conflicting duplicate toolCallId: {row[key]}"
            )
    return dict(sorted(keyed.items()))


def _normalize_rows(
    surface: str, key: str, rows: list[Row], normalize: Callable[[Row], Row]
) -> dict[str, Row]:
    return _keyed(surface, key, (normalize(row) for row in rows))


def _call_spec(raw: Row) -> Row:
    spec = {name: clean_required(raw[name], f"callSpec.{name}") for name in CALL_SPEC_FIELDS}
    spec["actionMode"] = ascii_lower(spec["actionMode"])
    spec["executionPattern"] = ascii_lower(spec["executionPattern"])
    return spec


def _request(raw: Row) -> Row:
    row = {
        "toolCallId": clean_required(raw["toolCallId"], "toolRequests[].toolCallId"),
        "toolName": clean_required(raw["toolName"], "toolRequests[].toolName"),
    }
    return _with_optionals(row, raw, ("schemaDigest", "callerId", "searchRefDigest"))


def _raw_error_text(raw_error: dict[str, Any], primary: str, fallback: str) -> str | None:
    """`primary` if the key exists (even blank: no fallback), else `fallback`; non-blank text."""
    value = raw_error[primary] if primary in raw_error else raw_error.get(fallback)
    return clean_optional(value) if isinstance(value, str) else None


def error_material(raw: Row) -> tuple[str | None, bool | None, str | None]:
    """Code, retryable and message of a result row; top-level fields win over `rawError`."""
    code = clean_optional(raw["errorCode"])
    retryable = raw["retryable"]
    message = clean_optional(raw["errorMessage"])
    raw_error = raw["rawError"]
    if isinstance(raw_error, dict):
        if code is None:
            code = _raw_error_text(raw_error, "errorCode", "code")
        if retryable is None and isinstance(raw_error.get("retryable"), bool):
            retryable = raw_error["retryable"]
        if message is None:
            message = _raw_error_text(raw_error, "errorMessage", "message")
    return code, retryable, message


def _result(raw: Row) -> Row:
    code, retryable, message = error_material(raw)
    given_status = clean_optional(raw["status"])
    if given_status is None:
        found = code is not None or retryable is not None or message is not None
        status = "error" if found else "ok"
    else:
        status = ascii_lower(given_status)
        if status not in ("ok", "error"):
            raise EvidenceInvalid(
                f"toolResults[].status invalid: unsupported value `{status}` "
                "(expected `ok` or `error`)"
            )
    result_digest = clean_optional(raw["resultDigest"])
    if result_digest is None and raw["payload"] is not None:
        result_digest = digest(raw["payload"])
    # The id is checked after the status, as the reference does: a bad status errors first.
    row: Row = {
        "toolCallId": clean_required(raw["toolCallId"], "toolResults[].toolCallId"),
        "status": status,
    }
    if result_digest is not None:
        row["resultDigest"] = result_digest
    if status == "error":
        row["error"] = {
            "errorCode": code or "unknown_error",
            "retryable": bool(retryable),
            "errorMessageDigest": digest_string(message or ""),
        }
    return row


def _use(raw: Row) -> Row:
    disposition = ascii_lower(clean_required(raw["disposition"], "toolUse[].disposition"))
    if disposition not in DISPOSITIONS:
        raise EvidenceInvalid(
            f"toolUse[].disposition invalid: unsupported value `{disposition}` "
            "(expected consumed|observed|discarded)"
        )
    row = {
        "toolCallId": clean_required(raw["toolCallId"], "toolUse[].toolCallId"),
        "disposition": disposition,
    }
    return _with_optionals(row, raw, ("resultDigest",))


def _required_fields(surface: str, names: Iterable[str]) -> Callable[[Row], Row]:
    def normalize(raw: Row) -> Row:
        return {name: clean_required(raw[name], f"{surface}[].{name}") for name in names}

    return normalize


_render_fields = _required_fields("toolRender", TOOL_RENDER_FIELDS)
_queue = _required_fields("reminderQueue", REMINDER_QUEUE_FIELDS)
_state_view_fields = _required_fields("stateViews", ("viewId", "viewDigest", "policyDigest"))


def _render(raw: Row) -> Row:
    row = _render_fields(raw)
    row["injectionPoint"] = ascii_lower(row["injectionPoint"])
    return row


def _state_view(raw: Row) -> Row:
    row = _state_view_fields(raw)
    refs = normalize_refs(raw["sourceRefs"])
    if refs:
        row["sourceRefs"] = refs
    return row


def _handoff(raw: Row) -> Row:
    row: Row = {"target": clean_required(raw["target"], "handoff.target")}
    refs = normalize_refs(raw["requiredArtifactRefs"])
    if refs:
        row["requiredArtifactRefs"] = refs
    return _with_optionals(row, raw, ("returnPathRef",))


def _ids(keys: Iterable[str]) -> list[str]:
    return sorted(keys)


def _difference(left: dict[str, Row], right: dict[str, Row]) -> list[str]:
    return [key for key in left if key not in right]


def _policy_valid(rows: dict[str, Row], expected: str) -> bool:
    return all(row["policyDigest"] == expected for row in rows.values())


def _optional_lists(pairs: dict[str, list[str]]) -> dict[str, list[str]]:
    return {name: values for name, values in pairs.items() if values}


class NormalizedEvidence(NamedTuple):
    """The normalised rows, the derived join and context state, and the digest bundle."""

    call_spec: Row
    requests: dict[str, Row]
    results: dict[str, Row]
    uses: dict[str, Row]
    renders: dict[str, Row]
    queues: dict[str, Row]
    state_views: dict[str, Row]
    protocol_state: Row
    handoff: Row | None
    session_refs: list[str]
    trajectory_refs: list[str]
    join_state: Row
    context_state: Row
    join_set: Row
    digests: dict[str, str]

    @property
    def join_closed(self) -> bool:
        closed: bool = self.join_state["joinClosed"]
        return closed

    def document(self) -> Row:
        """`normalized` as printed (join-check.md "Output"): empty lists and no handoff left out."""
        document: Row = {
            "callSpec": self.call_spec,
            "contextState": self.context_state,
            "digests": self.digests,
            "joinState": self.join_state,
            "kind": NORMALIZED_KIND,
            "protocolState": self.protocol_state,
            "schema": SCHEMA,
        }
        if self.handoff is not None:
            document["handoff"] = self.handoff
        rows = {
            "reminderQueue": self.queues,
            "stateViews": self.state_views,
            "toolRender": self.renders,
            "toolRequests": self.requests,
            "toolResults": self.results,
            "toolUse": self.uses,
        }
        document.update({name: list(keyed.values()) for name, keyed in rows.items() if keyed})
        document.update(
            _optional_lists(
                {"sessionRefs": self.session_refs, "trajectoryRefs": self.trajectory_refs}
            )
        )
        return document


def normalize_evidence(evidence: Row) -> NormalizedEvidence:
    """Normalise parsed evidence in the reference's order; raises EvidenceInvalid."""
    call_spec = _call_spec(evidence["callSpec"])
    requests = _normalize_rows("toolRequests", "toolCallId", evidence["toolRequests"], _request)
    results = _normalize_rows("toolResults", "toolCallId", evidence["toolResults"], _result)
    uses = _normalize_rows("toolUse", "toolCallId", evidence["toolUse"], _use)
    renders = _normalize_rows("toolRender", "toolCallId", evidence["toolRender"], _render)
    queues = _normalize_rows("reminderQueue", "queueId", evidence["reminderQueue"], _queue)
    state_views = _normalize_rows("stateViews", "viewId", evidence["stateViews"], _state_view)
    raw_protocol = evidence["protocolState"]
    protocol_state = {
        "stopReason": ascii_lower(
            clean_required(raw_protocol["stopReason"], "protocolState.stopReason")
        ),
        "continuationAllowed": raw_protocol["continuationAllowed"],
    }
    handoff = None if evidence["handoff"] is None else _handoff(evidence["handoff"])

    missing_results = _difference(requests, results)
    orphan_results = _difference(results, requests)
    missing_uses = _difference(results, uses)
    unknown_uses = _difference(uses, results)
    join_closed = not (missing_results or orphan_results or missing_uses or unknown_uses)
    join_lists = {
        "requestedCallIds": _ids(requests),
        "resultCallIds": _ids(results),
        "usedCallIds": _ids(uses),
        "missingResultCallIds": missing_results,
        "orphanResultCallIds": orphan_results,
        "missingUseCallIds": missing_uses,
        "unknownUseCallIds": unknown_uses,
    }
    join_state = {"joinClosed": join_closed, **_optional_lists(join_lists)}

    missing_renders = _difference(results, renders)
    flags = {
        "queueReductionPresent": bool(queues),
        "stateViewPresent": bool(state_views),
        "renderPolicyValid": _policy_valid(renders, call_spec["toolRenderProtocolDigest"]),
        "queuePolicyValid": _policy_valid(queues, call_spec["reminderQueuePolicyDigest"]),
        "stateViewPolicyValid": _policy_valid(state_views, call_spec["stateViewPolicyDigest"]),
    }
    context_ready = not protocol_state["continuationAllowed"] or (
        not missing_renders and all(flags.values())
    )
    context_lists = {
        "renderCallIds": _ids(renders),
        "queueIds": _ids(queues),
        "stateViewIds": _ids(state_views),
        "missingRenderCallIds": missing_renders,
    }
    context_state = {
        "continuationContextReady": context_ready,
        **flags,
        **_optional_lists(context_lists),
    }

    set_digests = {
        "requestSetDigest": digest(list(requests.values())),
        "resultSetDigest": digest(list(results.values())),
        "useSetDigest": digest(list(uses.values())),
        "toolRenderSetDigest": digest(list(renders.values())),
        "reminderQueueSetDigest": digest(list(queues.values())),
        "stateViewSetDigest": digest(list(state_views.values())),
        "protocolStateDigest": digest(protocol_state),
    }
    handoff_digest = None if handoff is None else digest(handoff)
    # join-check.md "Digests": all 25 keys, `handoffDigest` null (not omitted) without a handoff.
    join_set = {
        **set_digests,
        "handoffDigest": handoff_digest,
        **join_lists,
        **context_lists,
        **flags,
        "continuationContextReady": context_ready,
    }
    digests = {
        "callSpecDigest": digest(call_spec),
        **set_digests,
        "joinSetDigest": digest(join_set),
    }
    if handoff_digest is not None:
        digests["handoffDigest"] = handoff_digest
    return NormalizedEvidence(
        call_spec=call_spec,
        requests=requests,
        results=results,
        uses=uses,
        renders=renders,
        queues=queues,
        state_views=state_views,
        protocol_state=protocol_state,
        handoff=handoff,
        session_refs=normalize_refs(evidence["sessionRefs"]),
        trajectory_refs=normalize_refs(evidence["trajectoryRefs"]),
        join_state=join_state,
        context_state=context_state,
        join_set=join_set,
        digests=digests,
    )
