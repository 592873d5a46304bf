"""Browser sessions of a premath HTTP server (specs/mcp-http.md "People: browser login"):
one-time login codes and the sessions they open, kept in memory only, so a restart (or a revoked
token and a restart) logs every browser out.

A code or a session id is 32 random bytes, url-safe; only its SHA-256 digest is kept, so
nothing the server holds could be replayed. A code works once, within CODE_TTL_S of being
minted; a session lasts SESSION_TTL_S from its login whatever its activity, or until logout,
and the open event streams of a session end with it. Each caller (token id) keeps at most
MAX_CODES codes and MAX_SESSIONS sessions; past that its own oldest goes first, so no caller
can push out another's. Only a token holder can mint or open, so memory is bounded by the
token file's lines times these caps. Used from the event loop only.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio

CODE_TTL_S = 600.0
SESSION_TTL_S = 12 * 3600.0
MAX_CODES = 16
"""Unspent login codes kept per caller."""
MAX_SESSIONS = 128
"""Open sessions kept per caller (its browsers)."""
CONSOLE_CALLER = "@console"
"""Who a session opened by the start-up login URL belongs to: whoever reads the server's
console. Token ids cannot start with `@`, so it never names a token."""


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8", errors="replace")).digest()


@dataclass
class Session:
    caller: str
    """The token id the session acts as (CONSOLE_CALLER for the start-up URL)."""
    expires: float
    """On the sessions' monotonic clock."""
    ended: anyio.Event = field(default_factory=anyio.Event)
    """Set at logout, so open event streams end at once."""


class BrowserSessions:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._codes: dict[bytes, tuple[str, float]] = {}
        self._sessions: dict[bytes, Session] = {}

    def mint_code(self, caller: str) -> str:
        """A login code that opens one session for `caller`, once, within CODE_TTL_S."""
        self._forget_expired()
        code = secrets.token_urlsafe(32)
        self._codes[_digest(code)] = (caller, self.clock() + CODE_TTL_S)
        mine = [key for key, (owner, _) in self._codes.items() if owner == caller]
        for key in mine[: max(0, len(mine) - MAX_CODES)]:  # oldest first (insertion order)
            del self._codes[key]
        return code

    def redeem(self, code: str) -> str | None:
        """The caller a valid code was minted for; the code is spent either way."""
        entry = self._codes.pop(_digest(code), None)
        if entry is None or entry[1] <= self.clock():
            return None
        return entry[0]

    def open(self, caller: str) -> str:
        """A new session id for `caller` (call from the event loop: it makes an anyio Event)."""
        self._forget_expired()
        session_id = secrets.token_urlsafe(32)
        self._sessions[_digest(session_id)] = Session(caller, self.clock() + SESSION_TTL_S)
        mine = [key for key, session in self._sessions.items() if session.caller == caller]
        for key in mine[: max(0, len(mine) - MAX_SESSIONS)]:  # oldest first (insertion order)
            self._sessions.pop(key).ended.set()
        return session_id

    def find(self, session_id: str) -> Session | None:
        session = self._sessions.get(_digest(session_id))
        if session is None or session.expires <= self.clock():
            return None
        return session

    def remaining_s(self, session: Session) -> float:
        return max(0.0, session.expires - self.clock())

    def close(self, session_id: str) -> None:
        session = self._sessions.pop(_digest(session_id), None)
        if session is not None:
            session.ended.set()

    def _forget_expired(self) -> None:
        now = self.clock()
        for key in [key for key, (_, expires) in self._codes.items() if expires <= now]:
            del self._codes[key]
        for key in [key for key, session in self._sessions.items() if session.expires <= now]:
            self._sessions.pop(key).ended.set()
