"""`premath atif export|validate`: ATIF trajectories, judged as Harbor 0.26.0 judges them."""

from __future__ import annotations

import click

from premath.cli._options import json_option
from premath.cli._root import Reply, StrictGroup

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def validate_text(document: dict[str, Any]) -> str:
    lines = []
    for report in document["files"]:
        lines.append(f"{'valid' if report['valid'] else 'invalid'}: {report['path']}")
        for error in report["errors"]:
            where = error["location"] or "(document)"
            lines.append(f"  - {where}: {error['message']}")
    return "\n".join(lines)


def export_text(document: dict[str, Any]) -> str:
    from premath.terminal import counted

    head = (
        f"exported {document['path']} ({document['schema_version']}, "
        f"{counted(document['steps'], 'step')}): "
        f"{'valid' if document['valid'] else 'invalid'}"
    )
    errors = [f"  - {e['location'] or '(document)'}: {e['message']}" for e in document["errors"]]
    return "\n".join([head, *errors])


def trajectory_text(document: dict[str, Any]) -> str:
    from premath.store.canonical import document_bytes

    return document_bytes(document).decode("utf-8").removesuffix("\n")


@click.group("atif", cls=StrictGroup)
def atif() -> None:
    """Export and validate ATIF agent trajectories.

    ATIF is the Agent Trajectory Interchange Format Harbor reads; see specs/atif.md.
    """


@atif.command("validate")
@click.argument("files", nargs=-1, required=True, metavar="PATHS...")
@click.option(
    "--no-validate-media",
    is_flag=True,
    help="Skip the check that local image/audio files referenced by the trajectory exist.",
)
@json_option
def atif_validate(files: tuple[str, ...], no_validate_media: bool) -> Reply:
    """Check ATIF trajectories with Harbor's rules. Exit 1 if any is invalid.

    PATHS: trajectory files, or bench run folders (each stands for its atif/trajectory.json,
    as `atif export` takes the folder).

    \b
    premath atif validate bench-run runs/*/atif/trajectory.json --json
    """
    from premath.atif.validate import validate_files

    document = validate_files(files, check_media=not no_validate_media)
    return Reply(document, text=validate_text, exit_code=0 if document["valid"] else 1)


@atif.command("export")
@click.argument("source")
@click.option("--out", help="Write the trajectory here (else print it on stdout).")
@click.option("--force", is_flag=True, help="Replace an existing --out file.")
@click.option("--schema-version", help="ATIF version to write (default: premath's pinned one).")
@click.option("--session-id", help="Session id (default: the run folder's name).")
@click.option("--model-name", help="Model name for the agent (default: from run-metadata.json).")
@json_option
def atif_export(
    source: str,
    out: str | None,
    force: bool,
    schema_version: str | None,
    session_id: str | None,
    model_name: str | None,
) -> Reply:
    """Turn a benchmark run's events into an ATIF trajectory. SOURCE: a run folder or its
    raw/events.jsonl.

    \b
    premath atif export .premath/bench/runs/bench-... --out trajectory.json
    """
    from premath.atif.export import export_source, printable_document, write_export

    export = export_source(
        source, schema_version=schema_version, session_id=session_id, model_name=model_name
    )
    if out is None:
        return Reply(printable_document(export), text=trajectory_text)
    report = write_export(export, out, force=force)
    return Reply(report, text=export_text, exit_code=0 if report["valid"] else 1)
