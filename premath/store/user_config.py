"""Files premath keeps for the user, outside every repository and out of an agent's way: the
witness MAC keys and the loopback server's own token file (specs/mcp-http.md)."""

from __future__ import annotations

import os


def user_config_file(name: str, override_env: str) -> str:
    """`$<override_env>` when set, else `$XDG_CONFIG_HOME/premath/<name>`, else
    `~/.config/premath/<name>`."""
    explicit = os.environ.get(override_env, "").strip()
    if explicit:
        return explicit
    config = os.environ.get("XDG_CONFIG_HOME", "").strip() or os.path.join(
        os.path.expanduser("~"), ".config"
    )
    return os.path.join(config, "premath", name)
