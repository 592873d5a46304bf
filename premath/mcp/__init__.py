"""`premath mcp-serve`: issue memory and transport as MCP tools over stdio (a face, like cli)."""

from __future__ import annotations
