"""Turn a run's events (and harness trajectory rows) into one ATIF trajectory document.

Mapping (specs/atif.md "Export"): the instruction is a user step; each harness row is one step;
a `tool.call` joins the last agent step (or opens one, always when it carries the agent's
message) and its result or denial becomes an observation result in that same step, linked by
`source_call_id`, so links never cross steps. `final_metrics` are the sums of the steps' metrics.
Events that cannot be used (wrong shape, unknown call) are skipped and counted in `notes`, so a
crashed or tampered run still exports a valid document.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from premath import __version__
from premath.errors import Conflict, InputInvalid, NotFound
from premath.store.files import read_bounded
from premath.timefmt import iso8601_problem

# (feature, the ATIF version that introduced it), checked by `required_schema_version`.
_FEATURE_VERSIONS = (
    ("root extra", "ATIF-v1.1"),
    ("observation on a system step", "ATIF-v1.2"),
    ("metrics.cached_tokens as a subset of prompt_tokens", "ATIF-v1.2"),
    ("metrics.completion_token_ids", "ATIF-v1.3"),
    ("metrics.prompt_token_ids", "ATIF-v1.4"),
    ("agent.tool_definitions", "ATIF-v1.5"),
    ("step.is_copied_context", "ATIF-v1.5"),
    ("multimodal content parts", "ATIF-v1.6"),
    ("tool_call.extra", "ATIF-v1.7"),
    ("observation result extra", "ATIF-v1.7"),
    ("step.llm_call_count", "ATIF-v1.7"),
    ("trajectory_id or subagent_trajectories", "ATIF-v1.7"),
    ("audio content parts", "ATIF-v1.8"),
)
# ATIF's field order (premath/models/atif.py declaration order); None fields are left out.
_ROOT_ORDER = (
    "schema_version",
    "session_id",
    "trajectory_id",
    "agent",
    "steps",
    "notes",
    "final_metrics",
    "continued_trajectory_ref",
    "extra",
    "subagent_trajectories",
)
_STEP_ORDER = (
    "step_id",
    "timestamp",
    "source",
    "model_name",
    "reasoning_effort",
    "message",
    "reasoning_content",
    "tool_calls",
    "observation",
    "metrics",
    "is_copied_context",
    "llm_call_count",
    "extra",
)
_METRIC_TOTALS = (
    ("prompt_tokens", "total_prompt_tokens"),
    ("completion_tokens", "total_completion_tokens"),
    ("cached_tokens", "total_cached_tokens"),
    ("cost_usd", "total_cost_usd"),
)


@dataclass(frozen=True, slots=True)
class ExportContext:
    """What the events do not say: who ran, with which model, in which ATIF version."""

    session_id: str
    agent_name: str
    agent_version: str
    model_name: str | None = None
    schema_version: str | None = None
    """Configured version; None writes `ATIF_SCHEMA_VERSION` (raised if the rows need more)."""
    trajectory_id: str | None = None
    """This trajectory's own id (v1.7): the run's, where `session_id` may be Harbor's."""


def _version_key(version: str) -> tuple[int, int]:
    major, minor = version.removeprefix("ATIF-v").split(".")
    return int(major), int(minor)


def _has_parts(content: Any, kind: str | None = None) -> bool:
    return isinstance(content, list) and any(
        kind is None or (isinstance(part, dict) and part.get("type") == kind) for part in content
    )


def _features(document: dict[str, Any]) -> set[str]:
    found = set()
    if document.get("extra") is not None:
        found.add("root extra")
    if document.get("trajectory_id") is not None or document.get("subagent_trajectories"):
        found.add("trajectory_id or subagent_trajectories")
    if (document.get("agent") or {}).get("tool_definitions") is not None:
        found.add("agent.tool_definitions")
    for step in document.get("steps") or ():
        metrics = step.get("metrics") or {}
        results = (step.get("observation") or {}).get("results") or ()
        contents = [step.get("message"), *(result.get("content") for result in results)]
        checks = {
            "observation on a system step": step.get("source") == "system"
            and step.get("observation") is not None,
            "metrics.cached_tokens as a subset of prompt_tokens": "cached_tokens" in metrics,
            "metrics.completion_token_ids": "completion_token_ids" in metrics,
            "metrics.prompt_token_ids": "prompt_token_ids" in metrics,
            "step.is_copied_context": step.get("is_copied_context") is not None,
            "multimodal content parts": any(_has_parts(content) for content in contents),
            "audio content parts": any(_has_parts(content, "audio") for content in contents),
            "tool_call.extra": any(
                call.get("extra") is not None for call in step.get("tool_calls") or ()
            ),
            "observation result extra": any(r.get("extra") is not None for r in results),
            "step.llm_call_count": step.get("llm_call_count") is not None,
        }
        found.update(name for name, present in checks.items() if present)
    return found


def required_schema_version(document: dict[str, Any]) -> tuple[str, str | None]:
    """The lowest ATIF version covering the document's features, and the feature that needs it."""
    version, reason = "ATIF-v1.0", None
    features = _features(document)
    for feature, introduced in _FEATURE_VERSIONS:
        if feature in features and _version_key(introduced) > _version_key(version):
            version, reason = introduced, feature
    return version, reason


def choose_schema_version(
    document: dict[str, Any], configured: str | None
) -> tuple[str, str | None]:
    """The version to write and, when the configured one cannot carry the document, why not.

    Unconfigured: `ATIF_SCHEMA_VERSION`, raised to the lowest version the features need.
    """
    from premath.models.atif import ATIF_SCHEMA_VERSION

    needed, reason = required_schema_version(document)
    if configured is None:
        return max(ATIF_SCHEMA_VERSION, needed, key=_version_key), None
    check_schema_version(configured)
    if _version_key(configured) < _version_key(needed):
        return configured, (
            f"ATIF schema version {configured} cannot carry {reason} (introduced in {needed}); "
            f"configure {needed} or later"
        )
    return configured, None


def check_schema_version(version: str) -> str:
    """`version` if it is a known ATIF version, else InputInvalid listing the known ones."""
    from premath.models.atif import ATIF_SCHEMA_VERSIONS

    if version not in ATIF_SCHEMA_VERSIONS:
        raise InputInvalid(
            f"unknown ATIF schema version {version!r}; known: {', '.join(ATIF_SCHEMA_VERSIONS)}"
        )
    return version


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _timestamp(value: Any) -> str | None:
    if not isinstance(value, str) or iso8601_problem(value) is not None:
        return None
    return value


def _argv(value: Any) -> list[str] | None:
    if isinstance(value, list) and value and all(isinstance(token, str) for token in value):
        return value
    return None


class _Builder:
    """Steps under construction plus the step index of every tool call id seen so far."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.call_step: dict[str, int] = {}
        self.skipped = 0

    def open_step(self, source: str, message: str, at: Any, **fields: Any) -> dict[str, Any]:
        step = {"source": source, "message": message, "timestamp": _timestamp(at), **fields}
        self.steps.append(step)
        return step

    def add_row(self, event: dict[str, Any]) -> None:
        from pydantic import ValidationError

        from premath.models.bench import HarnessRow

        try:
            row = HarnessRow.model_validate(event.get("row"))
        except ValidationError:
            self.skipped += 1
            return
        metrics = row.metrics.model_dump(exclude_none=True) if row.metrics else None
        calls = (
            [call.model_dump() for call in row.tool_calls] if row.tool_calls is not None else None
        )
        step = self.open_step(
            row.source,
            row.message,
            row.timestamp or event.get("at"),
            model_name=row.model_name,
            reasoning_content=row.reasoning_content,
            tool_calls=calls,
            metrics=metrics or None,
            extra=row.extra,
        )
        if row.results is not None:
            step["observation"] = {
                "results": [result.model_dump(exclude_none=True) for result in row.results]
            }
        for call in calls or ():
            self.call_step[call["tool_call_id"]] = len(self.steps) - 1

    def add_call(self, event: dict[str, Any]) -> None:
        call_id, argv = _text(event.get("call_id")), _argv(event.get("argv"))
        message = _text(event.get("message"))
        if not call_id or argv is None:
            self.skipped += 1
            return
        last = self.steps[-1] if self.steps else None
        if message is not None or last is None or last["source"] != "agent":
            last = self.open_step("agent", message or "", event.get("at"))
        calls = last.setdefault("tool_calls", None) or []
        calls.append(
            {
                "tool_call_id": call_id,
                "function_name": _text(event.get("function_name")) or "exec",
                "arguments": {"argv": argv},
            }
        )
        last["tool_calls"] = calls
        self.call_step[call_id] = len(self.steps) - 1

    def add_result(self, event: dict[str, Any], content: str | None) -> None:
        call_id = _text(event.get("call_id"))
        index = self.call_step.get(call_id) if call_id else None
        if index is None or content is None:
            self.skipped += 1
            return
        step = self.steps[index]
        observation = step.get("observation") or {"results": []}
        observation["results"].append({"source_call_id": call_id, "content": content})
        step["observation"] = observation
        status = {"status": _text(event.get("status")), "exit_code": event.get("exit_code")}
        extra = dict(step.get("extra") or {})
        statuses = extra.get("tool_status")
        # A harness row may bring its own `extra`; ours is merged in, never trusted to be a dict.
        extra["tool_status"] = {**(statuses if isinstance(statuses, dict) else {}), call_id: status}
        step["extra"] = extra


def _denial_text(event: dict[str, Any]) -> str | None:
    rule = _text(event.get("rule"))
    return None if rule is None else f"denied by policy: {rule}; the command was not run"


def build_steps(events: Iterable[Any]) -> tuple[list[dict[str, Any]], int]:
    """ATIF steps (without ids) from events in order, and the number of events skipped."""
    builder = _Builder()
    for event in events:
        if not isinstance(event, dict) or not isinstance(event.get("kind"), str):
            builder.skipped += 1
            continue
        kind = event["kind"]
        if kind == "task.instruction":
            text = _text(event.get("text"))
            if text is None:
                builder.skipped += 1
            else:
                builder.open_step("user", text, event.get("at"))
        elif kind == "harness.row":
            builder.add_row(event)
        elif kind == "tool.call":
            builder.add_call(event)
        elif kind == "tool.result":
            builder.add_result(event, _text(event.get("output")))
        elif kind == "tool.denied":
            builder.add_result(event, _denial_text(event))
    return builder.steps, builder.skipped


def final_metrics(steps: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals that agree with the steps: each sum over the steps that report it, else absent."""
    totals: dict[str, Any] = {}
    for field, total in _METRIC_TOTALS:
        values = [step["metrics"][field] for step in steps if field in (step.get("metrics") or {})]
        if values:
            totals[total] = sum(values)
    totals["total_steps"] = len(steps)
    return totals


@dataclass(frozen=True, slots=True)
class Export:
    document: dict[str, Any]
    """The trajectory, in ATIF field order with None fields omitted."""
    skipped_events: int
    version_problem: str | None
    """Set when the configured schema version cannot carry the document (it is still written)."""


def _ordered(fields: dict[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    return {name: fields[name] for name in order if fields.get(name) is not None}


def _tool_status_on_results(steps: list[dict[str, Any]]) -> None:
    """v1.7 gives observation results an `extra`: each tool result carries its own status there
    too (step `extra.tool_status` stays, for readers of older versions)."""
    for step in steps:
        statuses = (step.get("extra") or {}).get("tool_status")
        if not isinstance(statuses, dict):
            continue
        for result in (step.get("observation") or {}).get("results", ()):
            status = statuses.get(result.get("source_call_id"))
            if isinstance(status, dict) and "extra" not in result:
                result["extra"] = {"tool_status": status}


def export_trajectory(events: Iterable[Any], context: ExportContext) -> Export:
    """The ATIF document of a run's events, in ATIF field order with None fields left out.

    Valid by construction (every accepted row and event maps to a valid step); the property test
    in tests/atif/test_export_properties.py holds us to it, and `bench run` validates the file.
    """
    steps, skipped = build_steps(events)
    if not steps:
        steps = [{"source": "system", "message": "no events were recorded for this run"}]
    for position, step in enumerate(steps, start=1):
        step["step_id"] = position
    document: dict[str, Any] = {
        "session_id": context.session_id,
        "agent": {
            "name": context.agent_name,
            "version": context.agent_version,
            "model_name": context.model_name,
        },
        "steps": steps,
        "final_metrics": final_metrics(steps),
    }
    if skipped:
        document["notes"] = f"premath skipped {skipped} event(s) it could not use"
    version, problem = choose_schema_version(document, context.schema_version)
    document["schema_version"] = version
    if _version_key(version) >= _version_key("ATIF-v1.7"):
        document["trajectory_id"] = context.trajectory_id
        _tool_status_on_results(steps)
    document["agent"] = _ordered(document["agent"], ("name", "version", "model_name"))
    document["steps"] = [_ordered(step, _STEP_ORDER) for step in steps]
    document = _ordered(document, _ROOT_ORDER)
    return Export(document, skipped, problem)


def export_source(
    source: str | os.PathLike[str],
    *,
    schema_version: str | None,
    session_id: str | None,
    model_name: str | None,
) -> Export:
    """Export a run folder (its `raw/events.jsonl`) or an events file given directly.

    A run folder lends its name as the session id and its run-metadata.json's model name.
    """
    from premath.store.jsonl import parsed_rows

    path = Path(source)
    events_path = path / "raw" / "events.jsonl" if path.is_dir() else path
    if not events_path.is_file():
        raise NotFound(f"no events at {events_path}; give a run folder or an events.jsonl file")
    if path.is_dir():
        metadata = _read_metadata(path / "run-metadata.json")
        model_name = model_name or metadata.get("model_name")
        session_id = session_id or path.resolve().name
    run_id = path.resolve().name if path.is_dir() else events_path.stem
    context = ExportContext(
        session_id=session_id or events_path.stem,
        agent_name="premath",
        agent_version=__version__,
        model_name=model_name if isinstance(model_name, str) else None,
        schema_version=schema_version,
        trajectory_id=run_id,
    )
    return export_trajectory(parsed_rows(events_path), context)


def _read_metadata(path: Path) -> dict[str, Any]:
    import orjson

    try:
        document = orjson.loads(read_bounded(path))
    except (OSError, InputInvalid, orjson.JSONDecodeError):
        return {}
    return document if isinstance(document, dict) else {}


def write_export(export: Export, out: str | os.PathLike[str], *, force: bool) -> dict[str, Any]:
    """Write the trajectory to `out` (an existing file only with `force`) and validate it."""
    from premath.store.atomic import write_atomic
    from premath.store.canonical import document_bytes

    target = Path(out)
    if target.exists() and not force:
        raise Conflict(f"{target} exists; pass --force to replace it, or choose another --out")
    write_atomic(target, document_bytes(export.document))
    errors = written_errors(export, target)
    return {
        "path": os.fspath(target),
        "schema_version": export.document.get("schema_version"),
        "session_id": export.document.get("session_id"),
        "steps": len(export.document.get("steps") or ()),
        "skipped_events": export.skipped_events,
        "valid": not errors,
        "errors": errors,
    }


def written_errors(export: Export, path: str | os.PathLike[str]) -> list[dict[str, str]]:
    """Harbor's verdict on the file `export` was written to, plus its schema-version problem."""
    from premath.atif.validate import validate_file

    errors = [error.model_dump() for error in validate_file(path).errors]
    if export.version_problem is not None:
        errors.append({"location": "schema_version", "message": export.version_problem})
    return errors


def printable_document(export: Export) -> dict[str, Any]:
    """The trajectory for stdout, where no file carries the problem: a version problem fails."""
    if export.version_problem is not None:
        raise InputInvalid(export.version_problem)
    return export.document
