"""Properties of the session and ledger serializers: normalisation and byte-stable round trips."""

import tempfile
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from premath.harness.feature_ledger import load_ledger, read_prefix, write_feature
from premath.harness.session import load_session, write_session
from premath.store.canonical import document_bytes
from premath.text import RUST_WHITE_SPACE, clean_optional, normalize_refs, rust_trim

NOW = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
padded = st.builds(
    lambda pad, core: pad + core + pad, st.sampled_from(["", " ", "\t", "\u3000", "\x1f"]), texts
)
ref_lists = st.lists(padded, max_size=6)


@given(ref_lists)
def test_normalize_refs_is_idempotent(refs):
    once = normalize_refs(refs)
    assert normalize_refs(once) == once
    assert once == sorted(set(once))
    assert all(ref and ref == rust_trim(ref) for ref in once)


@given(ref_lists, st.randoms())
def test_normalize_refs_ignores_order_and_repeats(refs, rng):
    shuffled = [*refs, *refs]
    rng.shuffle(shuffled)
    assert normalize_refs(shuffled) == normalize_refs(refs)


def test_trim_is_rusts_not_pythons():
    assert rust_trim("\x1fa\u3000") == "\x1fa"
    assert clean_optional(" \u2028 ") is None
    assert all(rust_trim(ch) == "" for ch in RUST_WHITE_SPACE)


optional_text = st.none() | padded


@given(
    state=st.sampled_from(["active", "stopped"]),
    issue_id=optional_text,
    summary=optional_text,
    next_step=optional_text,
    refs=st.tuples(ref_lists, ref_lists, ref_lists),
)
def test_session_round_trips_byte_stably(state, issue_id, summary, next_step, refs):
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "s.json")
        written = write_session(
            path,
            now=NOW,
            lock_timeout_s=1,
            state=state,
            issue_id=issue_id,
            summary=summary,
            next_step=next_step,
            instruction_refs=tuple(refs[0]),
            witness_refs=tuple(refs[1]),
            lineage_refs=tuple(refs[2]),
            issues_path=str(Path(folder) / "none.jsonl"),
        )
        data = Path(path).read_bytes()
        assert load_session(path) == written
        assert document_bytes(load_session(path)) == data
        again = write_session(
            path,
            now=NOW,
            lock_timeout_s=1,
            state=state,
            issues_path=str(Path(folder) / "none.jsonl"),
        )
        assert again == written
        assert Path(path).read_bytes() == data
        assert sorted(p.name for p in Path(folder).iterdir()) == ["s.json"]


@given(
    rows=st.lists(
        st.tuples(
            texts.filter(lambda t: rust_trim(t) != ""),
            st.sampled_from(["pending", "blocked"]),
            optional_text,
            ref_lists,
        ),
        min_size=1,
        max_size=5,
    )
)
def test_ledger_round_trips_byte_stably(rows):
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "l.json")
        for feature_id, status, summary, refs in rows:
            write_feature(
                path,
                feature_id=feature_id,
                status=status,
                summary=summary,
                instruction_refs=tuple(refs),
                now=NOW,
                lock_timeout_s=1,
            )
        data = Path(path).read_bytes()
        ledger = load_ledger(path, read_prefix(path))
        assert document_bytes(ledger) == data
        ids = [row["featureId"] for row in ledger["features"]]
        assert ids == sorted(set(ids))
        assert sorted(p.name for p in Path(folder).iterdir()) == ["l.json"]
