"""Our validator against Harbor 0.26.0's verdicts on every fixture of ../shared/conformance/atif."""

import re

import orjson
import pytest

from premath.atif.validate import validate_file
from tests.support.cli import SHARED
from tests.support.corpus import require_shared

ATIF_CORPUS = SHARED / "conformance" / "atif"


def _verdicts() -> dict[str, dict[str, object]]:
    path = ATIF_CORPUS / "verdicts.json"
    return orjson.loads(path.read_bytes()) if path.exists() else {}


VERDICTS = _verdicts()
ABSENT = ["<corpus absent>"]  # one case that skips with the reason, rather than an empty set
_UNION_TAG = re.compile(r"\.(str|list\[[^\]]*\]+)(?=\.|$)")
_DOCUMENT_RULE_PLACE = re.compile(r"^(steps\[\d+\]\.step_id|subagent_trajectories\[\d+\])")
_LINK_STEP = re.compile(r"not found in step (\d+)'s tool_calls")


def harbor_location(error: str) -> str | None:
    """The JSON location one of Harbor's error strings names (0-based), per the corpus README.

    None for a `.str` alternative line of a union, which only says the value was no string.
    """
    if not error.startswith("trajectory."):
        return ""  # "Invalid JSON", "Trajectory must be a JSON object/dict": the whole file
    location, _, message = error.removeprefix("trajectory.").partition(": ")
    if not location:  # a document rule: its message names the place
        message = message.removeprefix("Value error, ")
        linked = _LINK_STEP.search(message)
        if linked:
            return f"steps[{int(linked.group(1)) - 1}]"
        place = _DOCUMENT_RULE_PLACE.match(message)
        assert place, f"unparsed document-level error: {error}"
        return place.group(1)
    if location.endswith(".str") and ".list[" not in location:
        return None
    location = _UNION_TAG.sub("", location)
    return re.sub(r"\.(\d+)(?=\.|$|\[)", r"[\1]", location)


def test_corpus_is_complete():
    require_shared(ATIF_CORPUS)
    fixtures = {p.name for p in ATIF_CORPUS.glob("*.json")} - {"verdicts.json"}
    assert fixtures == set(VERDICTS)
    assert len(fixtures) == 87
    assert sum(1 for v in VERDICTS.values() if v["valid"]) == 33


@pytest.mark.parametrize("name", sorted(VERDICTS) or ABSENT)
def test_verdict_agrees_with_harbor(name):
    require_shared(ATIF_CORPUS)
    report = validate_file(ATIF_CORPUS / name)
    assert report.valid is VERDICTS[name]["valid"], report.errors


@pytest.mark.parametrize("name", sorted(n for n, v in VERDICTS.items() if not v["valid"]) or ABSENT)
def test_error_names_harbors_location(name):
    require_shared(ATIF_CORPUS)
    ours = [error.location for error in validate_file(ATIF_CORPUS / name).errors]
    for error in VERDICTS[name]["errors"]:
        wanted = harbor_location(error)
        if wanted is None:
            continue
        assert any(location.startswith(wanted) for location in ours), (wanted, ours)


@pytest.mark.parametrize(
    ("error", "location"),
    [
        (
            "trajectory.steps.2.tool_calls.0.arguments: expected dict type, got str",
            "steps[2].tool_calls[0].arguments",
        ),
        (
            "trajectory.steps.1.message.list[function-after[validate_content_type(), "
            "ContentPart]].0.type: Input should be 'text'",
            "steps[1].message[0].type",
        ),
        ("trajectory.steps.1.message.str: expected string type, got list", None),
        (
            "trajectory.: Value error, steps[3].step_id: expected 4 (sequential from 1), got 5",
            "steps[3].step_id",
        ),
        (
            "trajectory.: Value error, Observation result references source_call_id 'c' which is "
            "not found in step 4's tool_calls",
            "steps[3]",
        ),
        (
            "trajectory.steps[1].message[1].source.path: referenced image file does not exist: x",
            "steps[1].message[1].source.path",
        ),
        ("Trajectory must be a JSON object/dict", ""),
    ],
)
def test_harbor_location_parser(error, location):
    assert harbor_location(error) == location
