"""premath: a harness runtime for coding agents, wire-compatible with the reference CLI."""

from __future__ import annotations

__version__ = "0.1.0"
