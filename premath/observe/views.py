"""The four views of a surface (observation.md §4.3, §4.4, §6.2): what `observe`, the HTTP API
and the MCP `observe_*` tools answer. Views keep struct order; HTTP and MCP sort keys on output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from premath.errors import InputInvalid, NotFound
from premath.observe.schema import Document
from premath.observe.surface import ObservationSurface, load_surface

ObserveMode = Literal["latest", "needs_attention", "instruction", "projection"]
OBSERVE_MODES: tuple[ObserveMode, ...] = ("latest", "needs_attention", "instruction", "projection")
ProjectionMatch = Literal["typed", "compatibility_alias"]
PROJECTION_MATCHES: tuple[ProjectionMatch, ...] = ("typed", "compatibility_alias")


class ObservationNotFound(NotFound):
    """No instruction or projection matches; `key` is the id or digest as given."""

    def __init__(self, subject: Literal["instruction", "projection"], key: str) -> None:
        where = "" if subject == "instruction" else " in latest observation"
        super().__init__(f"{subject} not found{where}: {key}")
        self.subject = subject
        self.key = key

    @property
    def query_failure(self) -> str:
        """The MCP tool's (and the host action's) wording of the miss (agent-surface.md §1.9)."""
        return f"failed to query {self.subject}: {self.subject} not found: {self.key}"


@dataclass(frozen=True)
class ObserveQuery:
    """One question to a surface. `key` is the instruction id or projection digest."""

    mode: ObserveMode
    key: str = ""
    match: ProjectionMatch = "typed"


def query_for(
    mode: str, instruction_id: str | None, projection_digest: str | None, match: str
) -> ObserveQuery:
    """The query `observe`'s flags ask for; a missing id or digest is checked only in its own
    mode and only after the surface loaded, as in the reference (quirk 28)."""
    chosen: ProjectionMatch = "compatibility_alias" if match == "compatibility_alias" else "typed"
    if mode == "instruction":
        if instruction_id is None:
            raise InputInvalid("--instruction-id is required for --mode instruction")
        return ObserveQuery("instruction", instruction_id)
    if mode == "projection":
        if projection_digest is None:
            raise InputInvalid("--projection-digest is required for --mode projection")
        return ObserveQuery("projection", projection_digest, chosen)
    return ObserveQuery("needs_attention" if mode == "needs_attention" else "latest")


def latest_view(surface: ObservationSurface) -> Document:
    return {"summary": surface.summary, "latest": surface.latest}


def needs_attention_view(surface: ObservationSurface) -> Document:
    summary = surface.summary
    return {
        "needsAttention": summary["needsAttention"],
        "state": summary["state"],
        "topFailureClass": summary["topFailureClass"],
        "latestProjectionDigest": summary["latestProjectionDigest"],
        "latestInstructionId": summary["latestInstructionId"],
        "coherence": summary.get("coherence"),
        # ours, only from a live build: what needs a person now (D30a-2)
        **({"live": summary["live"]} if summary.get("live") is not None else {}),
    }


def instruction_view(surface: ObservationSurface, instruction_id: str) -> Document:
    """The row with exactly this id; of duplicates the later one after a stable sort by id."""
    found = None
    for row in sorted(surface.instructions, key=lambda row: row["instructionId"]):
        if row["instructionId"] == instruction_id:
            found = row
    if found is None:
        raise ObservationNotFound("instruction", instruction_id)
    return found


def projection_view(surface: ObservationSurface, digest: str, match: ProjectionMatch) -> Document:
    """Latest rows whose typed digest (or, with `compatibility_alias`, alias digest) is
    exactly `digest`; instructions never take part."""

    def kept(row: Document | None) -> Document | None:
        if row is None:
            return None
        if row.get("typedCoreProjectionDigest") == digest:
            return row
        if match == "compatibility_alias" and row.get("projectionDigest") == digest:
            return row
        return None

    latest = surface.latest
    view = {
        "projectionDigest": digest,
        "required": kept(latest["required"]),
        "delta": kept(latest["delta"]),
        "decision": kept(latest["decision"]),
    }
    if view["required"] is None and view["delta"] is None and view["decision"] is None:
        raise ObservationNotFound("projection", digest)
    return view


def answer(surface: ObservationSurface, query: ObserveQuery) -> Document:
    if query.mode == "latest":
        return latest_view(surface)
    if query.mode == "needs_attention":
        return needs_attention_view(surface)
    if query.mode == "instruction":
        return instruction_view(surface, query.key)
    return projection_view(surface, query.key, query.match)


def observe(surface_path: str, query: ObserveQuery) -> Document:
    """Load the surface at `surface_path` and answer `query`: the one entry point of the MCP
    `observe_*` tools and the host API's `observe.*` actions (SurfaceUnavailable,
    ObservationNotFound)."""
    return answer(load_surface(surface_path), query)


def observe_result(surface_path: str, query: ObserveQuery) -> Document:
    """`{action, surfacePath, view}`: the MCP `observe_*` tool's result, and the host API's
    `observe.*` payload, byte for byte the same (SurfaceUnavailable, ObservationNotFound)."""
    view = observe(surface_path, query)
    return {"action": f"observe.{query.mode}", "surfacePath": surface_path, "view": view}
