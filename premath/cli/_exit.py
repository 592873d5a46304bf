"""How an outcome reaches the streams, shared by click's exit point (`_root.run_command`) and
the fast path (`_fast.py`); free of click.

- a Reply: stdout gets the document (`--json`) or its text; exit `reply.exit_code`;
- a PremathError: `error: <message>` on stderr; exit `exc.exit_code` (1, or 2 for usage);
- an interruption: `error: interrupted ...` on stderr; exit 1;
- anything else: `error: internal error: ...` on stderr; exit 1.
With `--json`, each failure also prints `{"error": {"code": ..., "message": ...}}` on stdout.
"""

from __future__ import annotations

import os
import sys

from premath.cli._reply import Reply
from premath.errors import PremathError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO

INTERRUPTED = (
    "interrupted (Ctrl-C or SIGTERM) before the command finished; files are whole "
    "(every write is atomic), so it is safe to run it again"
)


def write(stream: IO[str], data: bytes) -> None:
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        stream.flush()
        buffer.write(data)
        buffer.flush()
    else:
        stream.write(data.decode("utf-8"))
        stream.flush()


def emit_error(code: str, message: str, json_mode: bool) -> None:
    if json_mode:
        from premath.store.canonical import stdout_bytes

        write(sys.stdout, stdout_bytes({"error": {"code": code, "message": message}}))


def emit_reply(reply: Reply, json_mode: bool) -> int:
    for warning in reply.warnings:
        sys.stderr.write(f"warning: {warning}\n")
    if json_mode or reply.text is None:
        from premath.store.canonical import document_bytes, stdout_chunks

        # Every piece is encoded before the first is written: no half document on stdout.
        chunks = (
            stdout_chunks(reply.document) if reply.sorted_keys else [document_bytes(reply.document)]
        )
        for chunk in chunks:
            write(sys.stdout, chunk)
    else:
        write(sys.stdout, (reply.text(reply.document) + "\n").encode("utf-8"))
    return reply.exit_code


def interrupted(json_mode: bool) -> int:
    emit_error("interrupted", INTERRUPTED, json_mode)
    sys.stderr.write(f"error: {INTERRUPTED}\n")
    return 1


def premath_error(exc: PremathError, json_mode: bool) -> int:
    if os.environ.get("PREMATH_DEBUG") == "1":
        raise exc
    emit_error(exc.code, exc.message, json_mode)
    sys.stderr.write(f"error: {exc.message}\n")
    return exc.exit_code


def internal_error(exc: Exception, json_mode: bool) -> int:
    if os.environ.get("PREMATH_DEBUG") == "1":
        raise exc
    message = f"internal error: {type(exc).__name__}: {exc} (set PREMATH_DEBUG=1 for a traceback)"
    emit_error("internal_error", message, json_mode)
    sys.stderr.write(f"error: {message}\n")
    return 1
