"""The fleet's worker registry as MCP tools (specs/remote-workers.md "Workers"):
`harness_worker_register`, `harness_worker_heartbeat`, `harness_worker_deregister` and the read
tool `harness_workers`. A caller acts only as the worker ids its token allows
(premath/mcp/worker_identity.py); a refusal is a tool error the access log records with its
failure class. These tools change no issue, so no instruction witness is asked for: the token
is the caller's identity."""

from __future__ import annotations

import os
import threading
from typing import Any, Protocol

from premath.errors import PolicyDenied
from premath.mcp.caller import current_caller
from premath.mcp.worker_identity import token_may_act_as
from premath.record.worker_registry import (
    Beat,
    Registration,
    WorkerRegistry,
    checked_phase,
    registry_path,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from premath.clock import Clock

Document = dict[str, Any]
TRAJECTORY_NAME = "harness_trajectory.jsonl"
IDENTITY_REFUSED = "worker.identity_refused"


class RegistryConfig(Protocol):
    """What the registry's tools read of the server's configuration (mcp/tools.py's
    `ServerConfig`): where the issues file is, the lock bound, whether one token is shared."""

    @property
    def issues_path(self) -> str: ...
    @property
    def lock_timeout_s(self) -> float: ...
    @property
    def single_token(self) -> bool: ...


class WorkerTools:
    """The registry's tools, mixed into `ToolService` (its `config` and `clock`)."""

    config: RegistryConfig
    clock: Clock
    _registry: WorkerRegistry | None = None
    _registry_guard = threading.Lock()

    def _worker_registry(self) -> WorkerRegistry:
        """The registry beside the server's issues file (one per server: it owns the limiter)."""
        with self._registry_guard:
            if self._registry is None:
                self._registry = WorkerRegistry(
                    registry_path(self.config.issues_path), self.config.lock_timeout_s
                )
            return self._registry

    def _acting_as(self, worker_id: str) -> str:
        caller = current_caller()
        if not token_may_act_as(caller, worker_id, single_token=self.config.single_token):
            raise PolicyDenied(
                f"[failureClass={IDENTITY_REFUSED}] the token `{caller}` may not act as worker "
                f"{worker_id}: a token acts only as the worker of its own id and the ids under "
                f'it (`{caller}.1`); specs/remote-workers.md "Worker identity"'
            )
        return worker_id

    def harness_worker_register(self, args: Document) -> Document:
        registration = Registration(
            worker_id=self._acting_as(args["workerId"]),
            host=args.get("host", ""),
            node=args.get("node", ""),
            pid=args.get("pid"),
            premath_version=args.get("premathVersion", ""),
            started_at=args.get("startedAt", ""),
            heartbeat_s=float(args.get("heartbeatSeconds", 10)),
        )
        registry = self._worker_registry()
        entry = registry.register(registration, self.clock.now())
        return {"action": "harness.worker_register", "registryPath": registry.path, "worker": entry}

    def harness_worker_heartbeat(self, args: Document) -> Document:
        beat = Beat(
            worker_id=self._acting_as(args["workerId"]),
            phase=checked_phase(args["phase"]),
            issue_id=args.get("issueId"),
            attempt=args.get("attempt"),
            max_attempts=args.get("maxAttempts"),
        )
        registry = self._worker_registry()
        stored, entry = registry.heartbeat(beat, self.clock.now())
        return {
            "action": "harness.worker_heartbeat",
            "registryPath": registry.path,
            "stored": stored,
            "worker": entry,
        }

    def harness_worker_deregister(self, args: Document) -> Document:
        worker_id = self._acting_as(args["workerId"])
        registry = self._worker_registry()
        entry = registry.deregister(worker_id, args.get("reason", ""), self.clock.now())
        return {
            "action": "harness.worker_deregister",
            "registryPath": registry.path,
            "worker": entry,
        }

    def harness_workers(self, args: Document) -> Document:
        from premath.record.worker_board import workers_document

        path = self._worker_registry().path
        trajectory = os.path.join(os.path.dirname(path), TRAJECTORY_NAME)
        return workers_document(path, trajectory, self.clock.now())
