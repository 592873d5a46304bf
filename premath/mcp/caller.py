"""Who makes the MCP call running on this thread: the token id the HTTP gate accepted (None
over stdio, where the caller is the local user). Set by the server around each call; read by
the tools that check which worker ids a caller may act as (premath/mcp/worker_identity.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

_CALLER: ContextVar[str | None] = ContextVar("premath_mcp_caller", default=None)


@contextlib.contextmanager
def calling_as(token_id: str | None) -> Iterator[None]:
    """Run the block as a call of the caller holding token `token_id` (None: stdio)."""
    token = _CALLER.set(token_id)
    try:
        yield
    finally:
        _CALLER.reset(token)


def current_caller() -> str | None:
    """The token id of the call running on this thread (None: stdio)."""
    return _CALLER.get()
