"""Issue-row timestamps: chrono's relaxed RFC3339 on read, serde's AutoSi `Z` form on write."""

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from premath.timefmt import (
    STORED_STAMP,
    days_in_month,
    format_autosi_z,
    format_offset,
    normalize_relaxed,
    parse_relaxed,
    parse_strict_rfc3339,
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


_STORED = re.compile(STORED_STAMP)


@st.composite
def _near_stored_times(draw):
    """A time drawn from the stored grammar or from any day, clock and fraction, perhaps with
    one character changed: the grammar's edges (Feb 29, `:60`, `.000`) and its outside."""
    if draw(st.booleans()):
        stamp = draw(st.from_regex(_STORED, fullmatch=True))
    else:
        numbers = draw(st.tuples(*(st.integers(0, top) for top in (9999, 13, 32, 24, 61, 61))))
        stamp = "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}".format(*numbers)
        zeros = st.sampled_from(["000", "100000", "000000", "120000000", "000000000"])
        fraction = draw(st.text("0123456789", max_size=10) | zeros)  # AutoSi's `000` edge
        stamp += draw(st.sampled_from(["", "."])) + fraction + "Z"
    if draw(st.booleans()):
        at = draw(st.integers(0, len(stamp) - 1))
        stamp = stamp[:at] + draw(st.sampled_from("0159-:.TtZz\n \u0663")) + stamp[at + 1 :]
    return stamp


@given(st.lists(_near_stored_times(), min_size=1, max_size=4))
def test_the_batch_check_is_the_stored_grammar(stamps):
    """`stamps_are_stored` (C-level passes, no regex) accepts exactly `STORED_STAMP`'s times."""
    expected = all(_STORED.fullmatch(stamp) for stamp in stamps)
    assert stamps_are_stored(stamps) is expected
    assert stamp_is_stored(stamps[0]) is (_STORED.fullmatch(stamps[0]) is not None)


@given(_near_stored_times())
def test_a_big_batch_checks_the_same_grammar(stamp):
    """A store's worth of stamps, checked by distinct fields: one bad time among them shows."""
    stamps = ["2026-01-01T00:00:00.100Z"] * 5000 + [stamp]
    assert stamps_are_stored(stamps) is (_STORED.fullmatch(stamp) is not None)


_STRICT_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(?:\.([0-9]+))?([Zz]|[+-][0-9]{2}:[0-9]{2})"
)


@st.composite
def _near_strict_times(draw):
    """Strict RFC3339 times and near misses: any fraction and offset, one character changed."""
    numbers = draw(st.tuples(*(st.integers(0, top) for top in (9999, 13, 32, 24, 61, 61))))
    stamp = "{:04}-{:02}-{:02}{}{:02}:{:02}:{:02}".format(
        *numbers[:3], draw(st.sampled_from("Tt ")), *numbers[3:]
    )
    if draw(st.booleans()):
        stamp += "." + draw(st.text("0123456789", max_size=12))
    stamp += draw(
        st.sampled_from(["Z", "z", ""])
        | st.builds(
            "{}{:02}:{:02}".format, st.sampled_from("+-"), st.integers(0, 25), st.integers(0, 61)
        )
    )
    if draw(st.booleans()):
        at = draw(st.integers(0, len(stamp) - 1))
        stamp = stamp[:at] + draw(st.sampled_from("0159-:.+TZz \u0663")) + stamp[at + 1 :]
    return stamp


@given(_near_strict_times())
def test_the_strict_parser_takes_exactly_rfc3339s_grammar(stamp):
    """`parse_strict_rfc3339` (no regex) accepts what the grammar's regex matches, and then only
    real times: a match it refuses names an impossible day, hour, minute or offset."""
    parsed = parse_strict_rfc3339(stamp)
    match = _STRICT_RFC3339.fullmatch(stamp)
    if match is None:
        assert parsed is None
    elif parsed is None:
        year, month, day, hour, minute, second = (int(match.group(n)) for n in range(1, 7))
        offset = match.group(8)
        bad_offset = len(offset) == 6 and (int(offset[1:3]) > 23 or int(offset[4:6]) > 59)
        impossible_day = not 1 <= month <= 12 or not 1 <= day <= days_in_month(year, month)
        assert impossible_day or hour > 23 or minute > 59 or second > 60 or bad_offset
    else:
        fraction = match.group(7) or ""
        assert parsed[1] % 1_000_000_000 == int(fraction[:9].ljust(9, "0"))
