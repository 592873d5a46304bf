"""Which worker ids a bearer token may act as on the fleet record's tools (specs/remote-workers.md
"Worker identity"): the token id names the caller, so a worker reports only as itself or as one
of its own fleet's workers."""

from __future__ import annotations


def token_may_act_as(token_id: str | None, worker_id: str, *, single_token: bool) -> bool:
    """True if the caller holding token `token_id` may act as `worker_id`.

    No token (stdio: the caller is the local user) and an authority configured with a single
    token (one trust domain) allow every id; otherwise a token allows the worker id equal to its
    id and the ids under it (`fleet` allows `fleet.1`).
    """
    if token_id is None or single_token:
        return True
    return worker_id == token_id or worker_id.startswith(token_id + ".")
