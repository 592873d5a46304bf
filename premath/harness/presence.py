"""What a worker tells the authority about itself while it runs (specs/remote-workers.md
"Workers"): it registers when it starts, reports its phase as it moves through a step, and
deregisters with its reason when it stops. The loop calls a `Presence`; a local loop has none
(`NO_PRESENCE`), a remote or fleet worker's reports through MCP (premath/mcp/presence.py)."""

from __future__ import annotations

from typing import Protocol

from premath.record.worker_registry import Phase


class Presence(Protocol):
    """Each method's body here drops the report: `NoPresence` is this protocol as it stands."""

    def start(self) -> None:
        """Register (refusals that retrying cannot cure raise: the worker stops unstarted)."""
        return None

    def phase(
        self,
        phase: Phase,
        issue_id: str | None = None,
        attempt: int | None = None,
        max_attempts: int | None = None,
    ) -> None:
        """What the worker does now; reported at once and on every heartbeat after."""
        return None

    def stop(self, reason: str) -> None:
        """Deregister with `reason` (best effort: an unreachable authority marks it silent)."""
        return None


class NoPresence(Presence):
    """A loop nobody watches remotely: every report is dropped."""


NO_PRESENCE = NoPresence()


def presence_of(presence: Presence | None) -> Presence:
    """The worker's presence, or the one that drops every report."""
    return NO_PRESENCE if presence is None else presence
