"""The validator judges any input and never raises: arbitrary bytes, arbitrary JSON values."""

import tempfile
from pathlib import Path

import orjson
from hypothesis import given
from hypothesis import strategies as st

from premath.atif.validate import validate_document, validate_file

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
KEYS = (
    st.sampled_from(
        [
            "schema_version",
            "agent",
            "steps",
            "step_id",
            "source",
            "message",
            "tool_calls",
            "observation",
            "results",
            "source_call_id",
            "type",
            "source",
            "path",
            "name",
            "version",
        ]
    )
    | TEXT
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats() | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=5),
    max_leaves=25,
)


@given(st.binary(max_size=200))
def test_arbitrary_bytes_give_a_report(raw):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.json"
        path.write_bytes(raw)
        report = validate_file(path)
    assert report.valid is False or isinstance(orjson.loads(raw), dict)


@given(JSON)
def test_arbitrary_documents_give_located_errors(document):
    with tempfile.TemporaryDirectory() as folder:
        errors = validate_document(document, base_dir=Path(folder))
    for error in errors:
        assert isinstance(error.location, str)
        assert error.message
