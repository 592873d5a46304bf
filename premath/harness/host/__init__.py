"""The REPL host API v0: `scheme-eval` programs of host-action calls (agent-surface.md §3)."""

from __future__ import annotations
