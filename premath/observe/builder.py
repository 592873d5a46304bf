"""`premath observe-build` (observation.md §1.1, §2, §4, §5): witnesses and issue memory in,
the surface and its events out.

Paths are joined as the reference joins them (no normalisation: the default root is `<cwd>/.`,
which the text line prints), and `ref` values are the witness paths relative to that root.
Divergences (docs/divergences.md): both files are written atomically and together, so a failed
build leaves the previous surface and events as they were (D21-1); `--out-json` and
`--out-jsonl` naming one file is refused (D21-2); input errors name the file at fault (D21-3).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from premath.errors import ArtifactInvalid, InputInvalid, IoFailure
from premath.models.vocabulary import DEFAULT_ISSUES_PATH
from premath.observe import coherence as projections
from premath.observe.attention import LiveInputs, live_attention
from premath.observe.facts import text
from premath.observe.inputs import (
    INSTRUCTION_WITNESS_KIND,
    LATEST_FILES,
    BuildInputInvalid,
    Document,
    InputReader,
    is_instruction_candidate,
    rust_file_stem,
    texts,
)
from premath.observe.schema import (
    DECISION,
    DELTA,
    INSTRUCTION,
    LATEST,
    REQUIRED,
    SUMMARY,
    Record,
    lay_out,
    sorted_value,
)
from premath.observe.surface import DEFAULT_EVENTS_PATH, DEFAULT_SURFACE_PATH, ObservationSurface
from premath.store.atomic import StagedWriteFailed, write_atomic_together
from premath.store.canonical import document_bytes, sorted_row_bytes
from premath.store.documents import os_error_text
from premath.text import rust_trim

DEFAULT_CIWITNESS_DIR = "artifacts/ciwitness"


def rust_join(base: str, value: str) -> str:
    """Rust's `PathBuf::join`: an absolute value replaces the base; nothing is normalised."""
    if value.startswith("/"):
        return value
    if base.endswith("/"):
        return base + value
    return f"{base}/{value}"


def _components(path: str) -> list[str]:
    """Rust's `Path::components` of an absolute or plain path: `.` and empty parts vanish."""
    parts = [part for part in path.split("/") if part not in ("", ".")]
    return ["/", *parts] if path.startswith("/") else parts


def relative_ref(path: str, root: str) -> str:
    """Rust's `strip_prefix` by components; the path as given when it is not under the root."""
    own, prefix = _components(path), _components(root)
    if own[: len(prefix)] == prefix:
        return "/".join(own[len(prefix) :])
    return path


@dataclass(frozen=True)
class BuildPaths:
    """The five paths of a build, joined as the reference joins them."""

    repo_root: str
    ciwitness_dir: str
    issues_path: str
    out_json: str
    out_jsonl: str

    @classmethod
    def resolve(
        cls,
        repo_root: str = ".",
        ciwitness_dir: str = DEFAULT_CIWITNESS_DIR,
        issues_path: str = DEFAULT_ISSUES_PATH,
        out_json: str = DEFAULT_SURFACE_PATH,
        out_jsonl: str = DEFAULT_EVENTS_PATH,
    ) -> BuildPaths:
        """Trimmed; a relative root joins the cwd, the other relative paths join the root."""
        root = rust_join(os.getcwd(), rust_trim(repo_root))
        return cls(
            root,
            *(rust_join(root, rust_trim(value)) for value in (ciwitness_dir, issues_path)),
            *(rust_join(root, rust_trim(value)) for value in (out_json, out_jsonl)),
        )


class BuildFailed(ArtifactInvalid):
    """The surface could not be built; nothing was written."""


def _read_fields(record: Record, payload: Document) -> Document:
    """Every optional field of `record` read with `text`, every list with `texts`."""
    values: Document = {}
    for field in record.fields:
        if field.kind == "optional":
            values[field.name] = text(payload.get(field.name))
        elif field.kind == "texts":
            values[field.name] = texts(payload.get(field.name))
    return values


def _row(record: Record, payload: Document, ref: str) -> Document:
    """A delta, required or decision row (observation.md §2.2, §3.2)."""
    values = _read_fields(record, payload)
    if record is DELTA:
        values["changedPathCount"] = len(values["changedPaths"])
    return lay_out(record, {**values, "ref": ref})


def _instruction(payload: Document, ref: str) -> Document:
    values = _read_fields(INSTRUCTION, payload)
    name = ref.rpartition("/")[2]
    ingest = payload.get("proposalIngest")
    values.update(
        ref=ref,
        instructionId=text(payload.get("instructionId")) or rust_file_stem(name),
        instructionClassification=sorted_value(payload.get("instructionClassification")),
        scope=sorted_value(payload.get("scope")),
        proposalIngest=sorted_value(ingest) if isinstance(ingest, dict) else None,
    )
    return lay_out(INSTRUCTION, values)


def _state(
    required: Document | None, decision: Document | None, instructions: list[Document]
) -> tuple[str, str | None]:
    """The state and the provisional top failure (observation.md §4.1)."""
    verdicts = {"accepted": "running", "rejected": "rejected"}
    if decision is not None:
        state = {"accept": "accepted", "reject": "rejected"}.get(decision["decision"], "error")
        top = decision["reasonClass"]
    elif required is not None:
        state = verdicts.get(required["verdictClass"], "error")
        top = next(iter(required["failureClasses"]), None)
    elif instructions:
        state = verdicts.get(instructions[-1]["verdictClass"], "error")
        top = next(iter(instructions[-1]["failureClasses"]), None)
    else:
        state, top = "empty", None
    if state == "rejected" and top is None:
        top = "rejected_without_reason"
    return state, top


def build_surface(
    paths: BuildPaths, reader: InputReader | None = None, live: LiveInputs | None = None
) -> ObservationSurface:
    """The surface of the witnesses and issue memory `paths` name; reads only, writes nothing.
    With `live`, the summary also tells what needs a person now (attention.py, D30a-2)."""
    reader = reader or InputReader()
    try:
        return _build(paths, reader, live)
    except BuildInputInvalid as exc:
        raise BuildFailed(
            f"failed to build observation surface (repoRoot={paths.repo_root}, "
            f"ciwitness={paths.ciwitness_dir}, issues={paths.issues_path}): {exc.cause}"
        ) from None


def _build(paths: BuildPaths, reader: InputReader, live: LiveInputs | None) -> ObservationSurface:
    root, folder = paths.repo_root, paths.ciwitness_dir
    loaded = {}
    for name in LATEST_FILES:
        path = rust_join(folder, name)
        payload = reader.witness(path)
        loaded[name] = None if payload is None else (payload, relative_ref(path, root))
    required_in, delta_in, decision_in = (loaded[name] for name in LATEST_FILES)
    required = None if required_in is None else _row(REQUIRED, *required_in)
    delta = None if delta_in is None else _row(DELTA, *delta_in)
    decision = None if decision_in is None else _row(DECISION, *decision_in)
    instructions = []
    for name in sorted(n for n in reader.listing(folder) if is_instruction_candidate(n)):
        path = rust_join(folder, name)
        payload = reader.witness(path)
        if payload is not None and text(payload.get("witnessKind")) == INSTRUCTION_WITNESS_KIND:
            instructions.append(_instruction(payload, relative_ref(path, root)))
    instructions.sort(key=lambda row: row["instructionId"])
    rows = reader.issue_rows(paths.issues_path)

    latest_digest = next(
        (
            d
            for row in (decision, required, delta)
            if row and (d := row.get("typedCoreProjectionDigest"))
        ),
        None,
    )
    state, top = _state(required, decision, instructions)
    projection = projections.coherence(delta, required, decision, instructions, rows)
    reasons = projection["attentionReasons"]
    if reasons and (state in ("accepted", "running", "empty") or top is None):
        top = reasons[0]
    attention = None if live is None else sorted_value(live_attention(rows, live))
    live_reasons = [] if attention is None else attention["attentionReasons"]
    if attention is not None and live_reasons and state not in ("rejected", "error"):
        # What fails now outranks an accepted witness's reason class (D30a-2).
        top = attention["recentWindow"]["topFailureClass"] or live_reasons[0]
    summary = lay_out(
        SUMMARY,
        {
            "state": state,
            "needsAttention": state in ("rejected", "error")
            or projection["needsAttention"]
            or bool(live_reasons),
            "topFailureClass": top,
            "latestProjectionDigest": latest_digest,
            "latestInstructionId": instructions[-1]["instructionId"] if instructions else None,
            "requiredCheckCount": len(required["requiredChecks"]) if required else 0,
            "executedCheckCount": len(required["executedChecks"]) if required else 0,
            "changedPathCount": delta["changedPathCount"] if delta else 0,
            "coherence": projection,
            "live": attention,
        },
    )
    latest = lay_out(LATEST, {"delta": delta, "required": required, "decision": decision})
    return ObservationSurface(summary, latest, tuple(instructions))


def surface_events(surface: ObservationSurface) -> list[Document]:
    """The events file's rows (observation.md §5), in order."""
    kinds = (
        ("delta", "ci.delta.v1.summary"),
        ("required", "ci.required.v1.summary"),
        ("decision", "ci.required.decision.v1.summary"),
    )
    events = [
        {"kind": kind, "payload": surface.latest[key]}
        for key, kind in kinds
        if surface.latest[key] is not None
    ]
    events += [
        {"kind": "ci.instruction.v1.summary", "payload": row} for row in surface.instructions
    ]
    events.append({"kind": "ci.observation.surface.v0.summary", "payload": surface.summary})
    coherence = surface.summary.get("coherence")
    if isinstance(coherence, dict):
        events.append({"kind": "ci.observation.surface.v0.coherence", "payload": coherence})
    return events


def events_bytes(surface: ObservationSurface) -> bytes:
    return b"".join(sorted_row_bytes(event) for event in surface_events(surface))


def _same_file(first: str, second: str) -> bool:
    return os.path.realpath(first) == os.path.realpath(second)


def write_outputs(paths: BuildPaths, surface: ObservationSurface) -> bytes:
    """Write the surface and its events together (D21-1); the surface's bytes are returned."""
    if _same_file(paths.out_json, paths.out_jsonl):
        raise InputInvalid(
            f"--out-json and --out-jsonl name the same file ({paths.out_json}): the events "
            "would replace the surface; give each its own path"
        )
    surface_bytes = document_bytes(surface.document())
    try:
        write_atomic_together(
            [(paths.out_json, surface_bytes), (paths.out_jsonl, events_bytes(surface))]
        )
    except StagedWriteFailed as exc:
        what = "observation surface" if exc.index == 0 else "observation events"
        target = paths.out_json if exc.index == 0 else paths.out_jsonl
        outcome = "nothing was changed" if exc.published == 0 else "the new surface was written"
        raise IoFailure(
            f"failed to write {what} {target}: {os_error_text(exc.error)} ({outcome})"
        ) from None
    return surface_bytes


@dataclass(frozen=True)
class BuildResult:
    surface: ObservationSurface
    surface_bytes: bytes
    paths: BuildPaths

    def attention_reason_count(self) -> int:
        coherence = self.surface.summary.get("coherence")
        reasons = coherence.get("attentionReasons") if isinstance(coherence, dict) else None
        return len(reasons) if isinstance(reasons, list) else 0


def build_observation(
    paths: BuildPaths, reader: InputReader | None = None, live: LiveInputs | None = None
) -> BuildResult:
    """Build the surface and write it with its events: `premath observe-build`."""
    surface = build_surface(paths, reader, live)
    return BuildResult(surface, write_outputs(paths, surface), paths)
