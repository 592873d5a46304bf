"""Replay parity (the harness contract's migration step 2): re-evaluate a program against the
same starting stores and compare its host effects with the ones recorded from an earlier run.

The recorded effects are a `scheme-eval --json` result document (or its `effects` list), as a
run prints it and a worker step keeps it (`work.effects.json` in the attempt's log folder).
Before any call runs, the recording must be whole (every effect it counts, each a
`premath.host_effect.v0` envelope) and from this program (the same call ids and actions, in
order, and no more effects than calls): else `scheme_eval.replay_invalid` or
`scheme_eval.replay_program_mismatch`, nothing run, nothing appended.

Then the program runs as usual (it appends its rows and mutates what it mutates: restoring the
starting stores is the caller's part) and each call is compared: `argsDigest`, `resultClass`
and `payload`, the payload after the values that differ from run to run by design are masked
(RFC 3339 times, write-witness ids and their milliseconds, session ids' stamps, run durations,
the jj snapshot). A call recorded but not run again, or run but not recorded, is a difference.
specs/instructions.md "Replay parity".
"""

from __future__ import annotations

import re

from premath.harness.host.effects import EFFECT_SCHEMA
from premath.harness.host.program import Program
from premath.harness.host.startup import StartupError, read_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

REPLAY_INVALID = "scheme_eval.replay_invalid"
REPLAY_MISMATCH = "scheme_eval.replay_program_mismatch"
COMPARED_FIELDS = ("argsDigest", "resultClass", "payload")
_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
_WRITE_WITNESS_ID = re.compile(r"^bdw1_\d+$")
_SESSION_ID = re.compile(r"^hs1_\d{8}T\d{6}Z")
_VOLATILE_KEYS = frozenset(
    {"recordedAtUnixMs", "generatedAtUnixMs", "runDurationMs", "durationMs", "jjSnapshot"}
)


def _invalid(path: str, reason: str) -> StartupError:
    return StartupError(f"replay effects {path} {reason}", REPLAY_INVALID)


def load_recorded_effects(path: str) -> list[dict[str, Any]]:
    """The recorded effects at `path`, checked whole (module doc)."""
    try:
        document = read_json(path, "replay effects", struct=False)
    except StartupError as exc:
        raise StartupError(exc.message, REPLAY_INVALID) from None
    if isinstance(document, dict):
        effects = document.get("effects")
        count = document.get("executedCallCount")
        if not isinstance(effects, list):
            raise _invalid(path, "has no `effects` list (expected a scheme-eval result document)")
        if count != len(effects):
            raise _invalid(path, f"is truncated: executedCallCount {count}, {len(effects)} effects")
    elif isinstance(document, list):
        effects = document
    else:
        raise _invalid(path, "is neither a scheme-eval result document nor a list of effects")
    for index, effect in enumerate(effects, start=1):
        if not isinstance(effect, dict) or effect.get("schema") != EFFECT_SCHEMA:
            raise _invalid(path, f"effect {index} is not a {EFFECT_SCHEMA} envelope")
        missing = [key for key in ("callId", "action", *COMPARED_FIELDS) if key not in effect]
        if missing:
            raise _invalid(path, f"effect {index} lacks {', '.join(missing)}")
    return effects


def check_same_program(path: str, recorded: list[dict[str, Any]], program: Program) -> None:
    """The recording's calls are this program's: same call ids and actions, in order."""
    if len(recorded) > len(program.calls):
        raise StartupError(
            f"replay effects {path} record {len(recorded)} calls; the program has "
            f"{len(program.calls)}",
            REPLAY_MISMATCH,
        )
    for effect, call in zip(recorded, program.calls, strict=False):
        if (effect["callId"], effect["action"]) != (call.call_id, call.action):
            raise StartupError(
                f"replay effects {path} are from another program: call {call.index} is "
                f"{call.call_id} ({call.action}), the recording's is {effect['callId']} "
                f"({effect['action']})",
                REPLAY_MISMATCH,
            )


def masked(value: Any) -> Any:
    """`value` with the by-design volatile parts replaced by placeholders (module doc)."""
    if isinstance(value, dict):
        return {
            key: "<volatile>" if key in _VOLATILE_KEYS else masked(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [masked(item) for item in value]
    if isinstance(value, str):
        if _TIME.match(value):
            return "<time>"
        if _WRITE_WITNESS_ID.match(value):
            return "bdw1_<ns>"
        return _SESSION_ID.sub("hs1_<stamp>", value)
    return value


def _first_difference(recorded: Any, replayed: Any, path: str = "") -> tuple[str, Any, Any] | None:
    if isinstance(recorded, dict) and isinstance(replayed, dict):
        for key in sorted(set(recorded) | set(replayed)):
            if key not in recorded or key not in replayed:
                return f"{path}/{key}", recorded.get(key), replayed.get(key)
            found = _first_difference(recorded[key], replayed[key], f"{path}/{key}")
            if found is not None:
                return found
        return None
    if isinstance(recorded, list) and isinstance(replayed, list) and len(recorded) == len(replayed):
        for index, (left, right) in enumerate(zip(recorded, replayed, strict=True)):
            found = _first_difference(left, right, f"{path}/{index}")
            if found is not None:
                return found
        return None
    return None if recorded == replayed else (path or "/", recorded, replayed)


def compare_effects(
    recorded: list[dict[str, Any]], replayed: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """One entry per differing field of each call, in call order."""
    differences: list[dict[str, Any]] = []
    for index in range(max(len(recorded), len(replayed))):
        left = recorded[index] if index < len(recorded) else None
        right = replayed[index] if index < len(replayed) else None
        shown = left or right
        assert shown is not None
        head = {"index": index + 1, "callId": shown["callId"], "action": shown["action"]}
        if left is None or right is None:
            where = "replayed only" if left is None else "recorded only"
            differences.append({**head, "field": "call", "detail": where})
            continue
        for field in COMPARED_FIELDS:
            found = _first_difference(masked(left[field]), masked(right[field]))
            if found is not None:
                pointer, was, now = found
                pointer = "" if field != "payload" else pointer
                differences.append(
                    {**head, "field": field + pointer, "recorded": was, "replayed": now}
                )
    return differences


def replay_report(path: str, recorded: list[dict[str, Any]], document: dict[str, Any]) -> Any:
    """The `replay` block of the result document."""
    differences = compare_effects(recorded, document["effects"])
    return {
        "effectsPath": path,
        "result": "drift" if differences else "parity",
        "recordedCallCount": len(recorded),
        "replayedCallCount": len(document["effects"]),
        "differences": differences,
    }
