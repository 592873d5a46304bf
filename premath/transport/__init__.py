"""The transport layer: typed lease and fiber actions behind one dispatch (agent-surface.md §2)."""

from __future__ import annotations
