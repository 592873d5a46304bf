"""Issue-row timestamps: chrono's relaxed RFC3339 on read, serde's AutoSi `Z` form on write."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from premath.timefmt import (
    format_autosi_z,
    format_offset,
    normalize_relaxed,
    parse_relaxed,
    stamp_is_stored,
    stamps_are_stored,
    stored_forms,
)


@pytest.mark.parametrize(
    ("text", "stored"),
    [
        ("2026-02-22T00:00:00Z", "2026-02-22T00:00:00Z"),
        ("2026-02-22T00:00:00.500+01:00", "2026-02-21T23:00:00.500Z"),
        ("2026-02-22t00:00:00.923596z", "2026-02-22T00:00:00.923596Z"),
        ("2026-02-22 00:00:00 UTC", "2026-02-22T00:00:00Z"),
        ("2026-02-22T00:00:00utc", "2026-02-22T00:00:00Z"),
        ("2026-  02-22T00:  00:00Z", "2026-02-22T00:00:00Z"),
        ("2026-2-3T4:5:6Z", "2026-02-03T04:05:06Z"),
        ("2026-02-22T00:00:00.1234567891234-0130", "2026-02-22T01:30:00.123456789Z"),
        ("2026-02-22T00:00:00.000000Z", "2026-02-22T00:00:00Z"),
        ("2026-02-22T00:00:00.120Z", "2026-02-22T00:00:00.120Z"),
        ("2026-02-22T00:00:00.120000Z", "2026-02-22T00:00:00.120Z"),
        ("2026-02-22T00:00:00.000001Z", "2026-02-22T00:00:00.000001Z"),
        ("2026-02-22T00:00:00+05 30", "2026-02-21T18:30:00Z"),
        ("2026-02-22T00:00:00 \u22120100", "2026-02-22T01:00:00Z"),
        ("2016-12-31T23:59:60Z", "2016-12-31T23:59:60Z"),
        ("2024-02-29T00:00:00Z", "2024-02-29T00:00:00Z"),
        ("-0001-01-01T00:00:00Z", "-0001-01-01T00:00:00Z"),
        ("+10000-01-01T00:00:00Z", "+10000-01-01T00:00:00Z"),
        ("0000-01-01T00:00:00Z", "0000-01-01T00:00:00Z"),
        ("2026-02-22T00:00:00Z  ", "2026-02-22T00:00:00Z"),
    ],
)
def test_relaxed_values_are_stored_in_autosi_z_form(text, stored):
    assert normalize_relaxed(text) == stored


@pytest.mark.parametrize(
    "text",
    [
        "2026-02-22T00:00:00",
        "2026-02-22",
        "2026-02-30T00:00:00Z",
        "2026-13-01T00:00:00Z",
        "2026-02-22T24:00:00Z",
        "2026-02-22T00:60:00Z",
        "2026-02-22T00:00:61Z",
        "2026-02-22T00:00:00.Z",
        "2026-02-22T00:00:00+24:00",
        "2026-02-22T00:00:00+01:60",
        "2026-02-22T00:00:00+1",
        "12026-02-22T00:00:00Z",
        " 2026-02-22T00:00:00Z x",
        "2026-02-22X00:00:00Z",
        "",
    ],
)
def test_values_chrono_rejects(text):
    assert normalize_relaxed(text) is None
    assert parse_relaxed(text) is None


def test_formats_from_epoch_nanoseconds():
    instant = parse_relaxed("2026-02-23T03:33:09.338421Z")
    assert instant == 1_771_817_589_338_421_000
    assert format_autosi_z(instant) == "2026-02-23T03:33:09.338421Z"
    assert format_offset(instant) == "2026-02-23T03:33:09.338421+00:00"
    assert format_offset(instant - 338_421_000) == "2026-02-23T03:33:09+00:00"
    assert format_autosi_z(-1) == "1969-12-31T23:59:59.999999999Z"


@given(
    st.integers(0, 9999),
    st.integers(1, 12),
    st.integers(1, 31),
    st.integers(0, 23),
    st.integers(0, 59),
    st.integers(0, 60),
    st.none() | st.text(alphabet="0123456789", max_size=12),
)
def test_the_one_pass_normaliser_agrees_with_the_relaxed_parser(
    year, month, day, hour, minute, second, fraction
):
    stamp = f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}"
    stamp += ("" if fraction is None else "." + fraction) + "Z"
    forms = stored_forms([stamp])
    if forms is None:  # the relaxed parser's: no such time, or a fraction past 9 digits
        assert normalize_relaxed(stamp) is None or fraction == "" or len(fraction) > 9
    else:
        assert forms == [normalize_relaxed(stamp)]
        assert stamp_is_stored(forms[0])
        assert stamp_is_stored(stamp) is (stamp == forms[0])
        assert stamps_are_stored([stamp, forms[0]]) is (stamp == forms[0])
