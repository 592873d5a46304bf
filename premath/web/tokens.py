"""Bearer tokens of premath's HTTP servers: `mcp-serve --transport streamable-http` and
`observe-serve --token-file` (specs/mcp-http.md "Tokens").

A token file holds one token a line, `<token id> <token>`; `#` starts a comment line. The id
names the caller in the access log (it is never a secret); the token is at least 32 characters
of `A-Z a-z 0-9 - _ . ~ + / =` (what `secrets.token_urlsafe(32)` prints fits). Several lines
let each worker have its own token, revoked by deleting its line and restarting the server. A
file that other users can read or write is refused, as ssh refuses a private key.

For mcp-serve, `PREMATH_MCP_TOKEN` gives one token (id `env`) instead, and a loopback server
given neither uses, creating it with mode 0600 on first start, the file
`$XDG_CONFIG_HOME/premath/mcp-serve.tokens` (else `~/.config/...`, or `PREMATH_MCP_TOKEN_FILE`):
outside the repository, printed by path.

Presented tokens are compared by SHA-256 digest with `hmac.compare_digest` against every
configured token, so neither the match nor its position shows in the timing; the server keeps
only the digests.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import re
import secrets
import stat
from dataclasses import dataclass

from premath.errors import InvalidUsage
from premath.store.files import read_capped
from premath.store.user_config import user_config_file

TOKEN_ENV = "PREMATH_MCP_TOKEN"
TOKEN_FILE_ENV = "PREMATH_MCP_TOKEN_FILE"
MIN_TOKEN_CHARS = 32
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_TOKEN = re.compile(r"[A-Za-z0-9\-_.~+/=]+")
_MAX_FILE_BYTES = 1 << 20


@dataclass(frozen=True)
class TokenSet:
    """Token ids and the SHA-256 digests of their tokens; `source` says where they came from."""

    entries: tuple[tuple[str, bytes], ...]
    source: str

    def identify(self, presented: str) -> str | None:
        """The id of the token `presented` is, or None; constant time over all tokens."""
        digest = hashlib.sha256(presented.encode("utf-8", errors="replace")).digest()
        found = None
        for token_id, expected in self.entries:
            if hmac.compare_digest(digest, expected):
                found = token_id
        return found


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("ascii")).digest()


def _checked_token(token: str, where: str) -> str:
    if len(token) < MIN_TOKEN_CHARS or not _TOKEN.fullmatch(token):
        raise InvalidUsage(
            f"{where}: a token must be at least {MIN_TOKEN_CHARS} characters of "
            "A-Z a-z 0-9 - _ . ~ + / = (make one with: python3 -c "
            "'import secrets; print(secrets.token_urlsafe(32))')"
        )
    return token


def parse_token_file(path: str, text: str) -> TokenSet:
    entries = [(token_id, _digest(token)) for token_id, token in token_lines(path, text)]
    return TokenSet(tuple(entries), path)


def token_lines(path: str, text: str) -> list[tuple[str, str]]:
    """The `(token id, token)` lines of a token file, checked (ids and tokens unique)."""
    entries: list[tuple[str, str]] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        where = f"token file {path}:{number}"
        if len(parts) != 2 or not _ID.fullmatch(parts[0]):
            raise InvalidUsage(
                f"{where}: expected `<token id> <token>` (id: letters, digits, . _ -)"
            )
        token = _checked_token(parts[1], where)
        if any(token_id == parts[0] or known == token for token_id, known in entries):
            raise InvalidUsage(f"{where}: token id and token must each be unique")
        entries.append((parts[0], token))
    if not entries:
        raise InvalidUsage(f"token file {path} holds no token")
    return entries


def load_token_file(path: str) -> TokenSet:
    """A token file, refused when missing, not a regular file, or open to other users."""
    return parse_token_file(path, _private_text(path))


def client_tokens(token_file: str | None) -> list[tuple[str, str]]:
    """What a client presents (a remote worker, a fleet's coordinator): the `(id, token)` lines
    of `--token-file` (the server's format, so an operator can hand out a subset of its lines),
    else `PREMATH_MCP_TOKEN` as id `env`; neither is a usage error."""
    if token_file is not None:
        return token_lines(token_file, _private_text(token_file))
    token = os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        raise InvalidUsage(
            f"a remote worker needs its bearer token: give --token-file FILE (lines `<id> "
            f"<token>`, mode 0600) or set {TOKEN_ENV}"
        )
    return [("env", _checked_token(token, TOKEN_ENV))]


def _private_text(path: str) -> str:
    """A token file's text, refused when missing, not a regular file, or open to others."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise InvalidUsage(f"cannot read token file {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as handle:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise InvalidUsage(f"token file {path} is not a regular file")
        if stat.S_IMODE(mode) & 0o077:
            raise InvalidUsage(
                f"token file {path} is open to other users (mode {stat.S_IMODE(mode):04o}); "
                f"run `chmod 600 {path}`"
            )
        data = read_capped(handle, _MAX_FILE_BYTES)
    if len(data) > _MAX_FILE_BYTES:
        raise InvalidUsage(f"token file {path} is larger than {_MAX_FILE_BYTES} bytes")
    return data.decode("utf-8", errors="replace")


def token_from_env() -> TokenSet | None:
    """`PREMATH_MCP_TOKEN` as a one-token set with id `env`, or None when unset."""
    token = os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        return None
    return TokenSet((("env", _digest(_checked_token(token, TOKEN_ENV))),), f"${TOKEN_ENV}")


def local_token_file() -> str:
    """Where a loopback server keeps the token it generates for itself."""
    return user_config_file("mcp-serve.tokens", TOKEN_FILE_ENV)


def ensure_local_token_file() -> tuple[TokenSet, bool]:
    """The loopback server's own token file, created (mode 0600, one token `local`) when
    missing; True when it was created now."""
    path = local_token_file()
    created = False
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o700, exist_ok=True)
        text = (
            "# premath mcp-serve tokens (specs/mcp-http.md): <token id> <token>, one a line\n"
            f"local {secrets.token_urlsafe(32)}\n"
        )
        with contextlib.suppress(FileExistsError):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="ascii") as handle:
                handle.write(text)
            created = True
    return load_token_file(path), created


def resolve_tokens(
    token_file: str | None, *, loopback: bool, where: str
) -> tuple[TokenSet, str | None]:
    """The server's tokens: `--token-file`, else `PREMATH_MCP_TOKEN`, else (loopback only) its
    own generated file; a note for the banner says where a generated token is. A non-loopback
    bind without a token refuses to start."""
    if token_file is not None:
        return load_token_file(token_file), None
    from_env = token_from_env()
    if from_env is not None:
        return from_env, None
    if not loopback:
        raise InvalidUsage(
            f"refusing to serve {where} without a bearer token: give --token-file FILE or set "
            f"{TOKEN_ENV} (a non-loopback address is reachable by other machines)"
        )
    tokens, created = ensure_local_token_file()
    verb = "generated" if created else "using"
    return tokens, (
        f"token file: {tokens.source} ({verb}; clients send `Authorization: Bearer <token>` "
        "with the token on its `local` line)"
    )
