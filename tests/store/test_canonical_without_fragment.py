"""With an orjson older than 3.10 (no `Fragment`, as some machines' system packages are), every
encoder still writes serde's floats, byte for byte as with `Fragment`."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from premath.harness.join.digests import canonical_bytes
from premath.store import canonical

floats = st.floats(allow_nan=False, allow_infinity=False)
texts = st.text(st.characters(codec="utf-8"), max_size=12)
values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | floats | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12,
)
ENCODERS = [canonical.stdout_bytes, canonical.document_bytes, canonical.row_bytes]
ENCODERS += [canonical.digest_input]


def _without_fragment(encode, value, monkeypatch: pytest.MonkeyPatch) -> bytes:
    with monkeypatch.context() as patched:
        patched.setattr(canonical, "_FRAGMENT", None)
        return encode(value)


@given(value=values)
def test_every_encoder_writes_the_same_bytes_without_fragment(value):
    with pytest.MonkeyPatch.context() as monkeypatch:
        for encode in ENCODERS:
            expected = encode(canonical.with_serde_floats(value))
            produced = _without_fragment(
                lambda v, encode=encode: encode(canonical.with_serde_floats(v)), value, monkeypatch
            )
            assert produced == expected


@given(value=values)
def test_join_digests_are_the_same_without_fragment(value):
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert _without_fragment(canonical_bytes, value, monkeypatch) == canonical_bytes(value)


def test_a_float_is_written_as_serde_writes_it_without_fragment(monkeypatch):
    monkeypatch.setattr(canonical, "_FRAGMENT", None)
    row = {"metadata": {"ratio": 1e16, "small": 1.5e-7, "text": "1e16"}}
    assert canonical.row_bytes(canonical.with_serde_floats(row)) == (
        b'{"metadata":{"ratio":1e16,"small":1.5e-7,"text":"1e16"}}\n'
    )
