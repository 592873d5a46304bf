"""`premath transport-dispatch` and `premath transport-check`: the typed transport actions
(agent-surface.md §2)."""

from __future__ import annotations

import click

from premath.cli._options import json_option
from premath.cli._root import CONTEXT_SETTINGS, AppContext, Reply, StrictCommand, pass_app

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def dispatch_text(document: dict[str, Any]) -> str:
    return "\n".join(
        [
            "premath transport-dispatch",
            f"  Action: {document['action']}",
            f"  Action ID: {document.get('actionId') or '<none>'}",
            f"  Result: {document.get('result') or 'unknown'}",
            f"  Semantic digest: {document.get('semanticDigest') or '<none>'}",
        ]
    )


def check_text(document: dict[str, Any]) -> str:
    return "\n".join(
        [
            "premath transport-check",
            f"  Check kind: {document['checkKind']}",
            f"  Registry kind: {document['registryKind']}",
            f"  Profile: {document['profileId']}",
            f"  Result: {document['result']}",
            f"  Actions: {document['actionCount']}",
            f"  Issues: {len(document['issues'])}",
            f"  Semantic digest: {document['semanticDigest']}",
        ]
    )


@click.command("transport-dispatch", cls=StrictCommand, context_settings=CONTEXT_SETTINGS)
@click.option("--action", required=True, help="Transport action, e.g. issue.claim_next")
@click.option("--payload", default="{}", show_default=True, help="Action payload (JSON object)")
@json_option
@pass_app
def transport_dispatch(app: AppContext, action: str, payload: str) -> Reply:
    """Dispatch one transport action. A rejection is an envelope (exit 0), not an error.

    \b
    premath transport-dispatch --action issue.lease_release \\
        --payload '{"id":"bd-7"}' --json
    """
    import orjson

    from premath.text import rust_trim
    from premath.transport.dispatch import dispatch

    if not rust_trim(action):
        raise click.UsageError("--action is required")
    try:
        decoded = orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise click.UsageError(f"failed to parse --payload JSON: {exc}") from None
    document = dispatch(action, decoded, now=app.clock.now(), timeout_s=app.lock_timeout())
    return Reply(document, text=dispatch_text)


@click.command("transport-check", cls=StrictCommand, context_settings=CONTEXT_SETTINGS)
@json_option
def transport_check() -> Reply:
    """Check the transport action registry. Routes and digests; exit 1 when rejected.

    \b
    premath transport-check --json
    """
    from premath.transport.registry import check_report

    report = check_report()
    exit_code = 0 if report["result"] == "accepted" else 1
    return Reply(report, text=check_text, exit_code=exit_code, sorted_keys=False)
