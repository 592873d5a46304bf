"""Joining a Ray cluster, for every premath piece that runs on one (the experiment executor, the
harness loop's fleet): the cluster at an address, or a small local instance on loopback.

This module imports ray at the top (and hands it on: `from premath.runner.ray_cluster import
ray` fails with what to install); only code that runs on Ray imports it.
"""

from __future__ import annotations

import sys

from premath.errors import InvalidUsage

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO

try:
    import ray
    import ray.exceptions
except ImportError:  # pragma: no cover - exercised by a test that hides ray
    raise InvalidUsage(
        "running on Ray needs Ray, which is not installed: pip install 'premath[ray]' "
        "(or run without --executor ray)"
    ) from None

__all__ = ["LOCAL_OBJECT_STORE_BYTES", "RayConnection", "ray"]

LOCAL_OBJECT_STORE_BYTES = 100 * 1024 * 1024
"""The object store of a local Ray instance we start: our tasks return small results."""


class RayConnection:
    """This process's connection to a cluster; `close` shuts down only an instance we started
    or joined ourselves (an already initialised Ray is left as it was)."""

    def __init__(self, address: str | None) -> None:
        self.address = address
        self._joined = False
        self._stdout: TextIO = sys.stdout

    def connect(self) -> None:
        """Join the cluster at `address`, or start a small local instance (loopback only)."""
        if ray.is_initialized():
            return
        settings: dict[str, Any] = {
            "log_to_driver": False,  # task output belongs in its own files, not on our stdout
            "include_dashboard": False,
            "logging_level": "warning",
        }
        if self.address is None:
            settings.update(
                address="local",
                object_store_memory=LOCAL_OBJECT_STORE_BYTES,
                _node_ip_address="127.0.0.1",
            )
        else:
            settings.update(address=self.address)
            del settings["include_dashboard"]
        # Ray prints cluster errors (a node marked dead) on the driver's sys.stdout, which
        # belongs to our exit point's document: point it at stderr while connected.
        self._stdout = sys.stdout
        sys.stdout = sys.stderr
        try:
            ray.init(**settings)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            sys.stdout = self._stdout
            where = self.address or "a local Ray instance"
            raise InvalidUsage(
                f"cannot reach the Ray cluster at {where}: {exc}; start one with "
                "`ray start --head` and pass its address (--ray-address or RAY_ADDRESS)"
            ) from None
        self._joined = True

    def close(self) -> None:
        if self._joined:
            ray.shutdown()
            self._joined = False
            sys.stdout = self._stdout
