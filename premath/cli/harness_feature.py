"""`premath harness-feature read|write|check|next`: the feature ledger artifact."""

from __future__ import annotations

import click

from premath.cli._options import json_option, path_option
from premath.cli._root import AppContext, Reply, StrictGroup, pass_app

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

LEDGER_PATH = ".premath/harness_feature_ledger.json"
ledger_path_option = path_option(
    LEDGER_PATH, "Harness feature-ledger artifact path", "--feature-ledger-path"
)


def _bool(value: bool) -> str:
    return "true" if value else "false"


def read_text(document: dict[str, Any]) -> str:
    ledger = document["ledger"]
    lines = [
        "premath harness-feature read",
        f"  Path: {document['path']}",
        f"  Features: {len(ledger['features'])}",
    ]
    if "sessionRef" in ledger:
        lines.append(f"  Session Ref: {ledger['sessionRef']}")
    return "\n".join(lines)


def write_text(document: dict[str, Any]) -> str:
    return "\n".join(
        [
            "premath harness-feature write",
            f"  Feature: {document['featureId']}",
            f"  Path: {document['path']}",
        ]
    )


def check_text(document: dict[str, Any]) -> str:
    summary = document["summary"]
    verdict = "OK" if document["result"] == "accepted" else "FAIL"
    lines = [
        f"[harness-feature] {verdict} (features={summary['featureCount']}, "
        f"closureComplete={_bool(summary['closureComplete'])}, "
        f"nextFeature={document['nextFeatureId'] or 'none'})"
    ]
    for error in document["errors"]:
        feature = f" feature={error['featureId']}" if "featureId" in error else ""
        lines.append(f"  - {error['class']}{feature} ({error['message']})")
    return "\n".join(lines)


def next_text(document: dict[str, Any]) -> str:
    lines = ["premath harness-feature next", f"  Path: {document['path']}"]
    if not document["exists"]:
        return "\n".join([*lines, "  Next Feature: none (ledger missing)"])
    return "\n".join(
        [
            *lines,
            f"  Next Feature: {document['nextFeatureId'] or 'none'}",
            f"  Closure Complete: {_bool(document['closureComplete'])}",
            f"  Feature Count: {document['featureCount']}",
        ]
    )


@click.group("harness-feature", cls=StrictGroup)
def harness_feature() -> None:
    """Read, write and check the feature ledger.

    The ledger (.premath/harness_feature_ledger.json) tracks what each issue's work is at;
    see specs/harness-feature-ledger.md.
    """


@harness_feature.command("read")
@ledger_path_option
@json_option
def harness_feature_read(path: str) -> Reply:
    """Show the feature ledger (only its header is validated).

    \b
    premath harness-feature read --json
    """
    from premath.harness.feature_ledger import read_ledger_document

    return Reply(read_ledger_document(path), text=read_text)


@harness_feature.command("write")
@ledger_path_option
@click.option("--feature-id", required=True, help="Feature identifier")
@click.option(
    "--status",
    required=True,
    type=click.Choice(["pending", "in_progress", "blocked", "completed"]),
    help="Feature status",
)
@click.option("--issue-id", help="Optional issue ID linked to this feature row")
@click.option("--summary", help="Optional compact summary")
@click.option("--session-ref", help="Optional session reference for boot continuity")
@click.option("--instruction-ref", multiple=True, help="Instruction references")
@click.option("--verification-ref", multiple=True, help="Verification references")
@json_option
@pass_app
def harness_feature_write(
    app: AppContext,
    path: str,
    feature_id: str,
    status: str,
    issue_id: str | None,
    summary: str | None,
    session_ref: str | None,
    instruction_ref: tuple[str, ...],
    verification_ref: tuple[str, ...],
) -> Reply:
    """Insert or update one feature row. A write that `check` would reject is refused.

    \b
    premath harness-feature write --feature-id feat.a --status in_progress \\
        --issue-id bd-7
    """
    from premath.harness.feature_ledger import write_feature

    document = write_feature(
        path,
        feature_id=feature_id,
        status=status,
        now=app.clock.now(),
        lock_timeout_s=app.lock_timeout(),
        issue_id=issue_id,
        summary=summary,
        session_ref=session_ref,
        instruction_refs=instruction_ref,
        verification_refs=verification_ref,
    )
    return Reply(document, text=write_text)


@harness_feature.command("check")
@ledger_path_option
@click.option(
    "--require-closure",
    is_flag=True,
    help="Require complete closure (all features completed with verification refs)",
)
@json_option
def harness_feature_check(path: str, require_closure: bool) -> Reply:
    """Check the feature ledger's rules. Exit 1 when rejected (the report is still printed).

    \b
    premath harness-feature check --require-closure --json
    """
    from premath.harness.feature_ledger import check_ledger

    report = check_ledger(path, require_closure)
    return Reply(report, text=check_text, exit_code=0 if report["result"] == "accepted" else 1)


@harness_feature.command("next")
@ledger_path_option
@json_option
def harness_feature_next(path: str) -> Reply:
    """Show the next feature to work on. The in_progress one, else the smallest pending.

    \b
    premath harness-feature next --json
    """
    from premath.harness.feature_ledger import next_feature

    return Reply(next_feature(path), text=next_text)
