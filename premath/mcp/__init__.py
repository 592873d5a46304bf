"""`premath mcp-serve`: the issue memory and transport as MCP tools over stdio (a face, like cli)."""
