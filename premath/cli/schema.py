"""`premath schema <kind>`: the JSON Schema of a format we own, from its pydantic model."""

from __future__ import annotations

import importlib

import click

from premath.cli._options import json_option
from premath.cli._root import Reply, StrictCommand

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA_KINDS: dict[str, str] = {
    "experiment": "premath.models.experiment:ExperimentSpec",
    "trial-result": "premath.models.trial:HarnessResult",
    "trial-record": "premath.models.trial:TrialRecord",
    "issue-row": "premath.models.issue:IssueModel",
    "atif-trajectory": "premath.models.atif:Trajectory",
    "bench-policy": "premath.models.bench:BenchPolicy",
    "bench-summary": "premath.models.bench:RunSummary",
    "bench-metadata": "premath.models.bench:RunMetadata",
    "bench-row": "premath.models.bench:HarnessRow",
}
"""kind -> "module:Model". Add a kind here to publish its schema; the model is imported lazily."""


def schema_document(kind: str) -> dict[str, Any]:
    module_name, attribute = SCHEMA_KINDS[kind].split(":")
    model = getattr(importlib.import_module(module_name), attribute)
    schema: dict[str, Any] = model.model_json_schema()
    return schema


@click.command("schema", cls=StrictCommand)
@click.argument("kind", type=click.Choice(sorted(SCHEMA_KINDS)))
@json_option
def schema(kind: str) -> Reply:
    """Print the JSON Schema of KIND (always JSON).

    \b
    premath schema experiment > experiment.schema.json
    """
    return Reply(schema_document(kind))
