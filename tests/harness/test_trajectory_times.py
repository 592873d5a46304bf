"""Strict RFC3339 for trajectory times: the reference's examples (harness-cli.md §3.3, the corpus
README), and the fast instant key against the parser."""

from datetime import UTC, datetime

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from premath.models.trajectory import instant_key
from premath.timefmt import parse_strict_rfc3339

EPOCH_2026_02_22 = int(datetime(2026, 2, 22, tzinfo=UTC).timestamp())


@pytest.mark.parametrize(
    ("text", "instant"),
    [
        ("2026-02-22T00:00:00Z", (EPOCH_2026_02_22, 0)),
        ("2026-02-22t00:00:00z", (EPOCH_2026_02_22, 0)),
        ("2026-02-22T01:00:00+01:00", (EPOCH_2026_02_22, 0)),
        ("2026-02-21T23:00:00-01:00", (EPOCH_2026_02_22, 0)),
        ("2026-02-22T00:00:00-00:00", (EPOCH_2026_02_22, 0)),
        ("2026-02-22T00:00:00+23:59", (EPOCH_2026_02_22 - 86340, 0)),
        ("2026-02-22T00:00:00.5Z", (EPOCH_2026_02_22, 500_000_000)),
        ("2026-02-22T00:00:00.123456789Z", (EPOCH_2026_02_22, 123_456_789)),
        ("2026-02-22T00:00:00.1234567891Z", (EPOCH_2026_02_22, 123_456_789)),
        ("2026-02-22T00:00:00.000000000000000001Z", (EPOCH_2026_02_22, 0)),
        ("2026-02-22T23:59:60Z", (EPOCH_2026_02_22 + 86399, 1_000_000_000)),
        ("2026-02-22T12:34:60.25Z", (EPOCH_2026_02_22 + 45299, 1_250_000_000)),
        ("0000-01-01T00:00:00Z", (-62167219200, 0)),
        ("2024-02-29T00:00:00Z", (int(datetime(2024, 2, 29, tzinfo=UTC).timestamp()), 0)),
        ("2000-02-29T00:00:00Z", (951782400, 0)),
    ],
)
def test_accepted_times_and_their_instants(text, instant):
    assert parse_strict_rfc3339(text) == instant
    assert instant_key(text) == instant[0] * 2_000_000_000 + instant[1]


@pytest.mark.parametrize(
    "text",
    [
        "2026-02-22T00:01Z",
        "2026-02-22",
        "2026-02-22T00:00:00",
        "2026-02-22T00:00:00+24:00",
        "2026-02-22T00:00:00+01",
        "2026-02-22T00:00:00+0100",
        "2026-02-22T00:00:00+01:60",
        "2026-02-22T00:00:00.Z",
        "2026-02-22 00:00:00Z",
        "2026-02-22T00:00:00\u221201:00",
        "2026-02-30T00:00:00Z",
        "2026-13-01T00:00:00Z",
        "2026-00-01T00:00:00Z",
        "2026-02-00T00:00:00Z",
        "2025-02-29T00:00:00Z",
        "1900-02-29T00:00:00Z",
        "2026-02-22T24:00:00Z",
        "2026-02-22T00:60:00Z",
        "2026-02-22T00:00:61Z",
        "2026-02-22T00:00:00ZZ",
        " 2026-02-22T00:00:00Z",
        "2026-02-22T00:00:00Z ",
        "+2026-02-22T00:00:00Z",
        "20260-02-22T00:00:00Z",
        "2026-2-22T00:00:00Z",
        "2026-02-22T0:00:00Z",
        "\u0662026-02-22T00:00:00Z",
        "2026-02-22T00:00:0\u0660Z",
        "2026-02-22T00:00:00.\u0661Z",
        "2026-02-22T00:00:00UTC",
        "2026-02-22T00:00:00+01:00:00",
        "",
    ],
)
def test_rejected_times(text):
    assert parse_strict_rfc3339(text) is None
    assert instant_key(text) is None


def expected_key(text: str) -> int | None:
    parsed = parse_strict_rfc3339(text)
    return None if parsed is None else parsed[0] * 2_000_000_000 + parsed[1]


NEAR_RFC3339 = st.from_regex(
    r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}(:[0-9]{1,3})?(\.[0-9]{0,12})?"
    r"([Zz]|[+\-\u2212][0-9]{2}(:?[0-9]{2})?)?\Z"
)


@given(st.one_of(NEAR_RFC3339, st.text(max_size=40)))
@example("2026-02-22T00:00:5Z")
@example("2026-02-22T00:00:59Zx")
def test_instant_key_equals_the_strict_parser(text):
    assert instant_key(text) == expected_key(text)
    assert instant_key(text) == expected_key(text)  # again, now from the minute cache


@given(st.datetimes(timezones=st.just(UTC)), st.datetimes(timezones=st.just(UTC)))
def test_instant_keys_order_as_the_instants(first, second):
    def key(moment: datetime) -> int | None:
        return instant_key(f"{moment.year:04d}" + moment.strftime("-%m-%dT%H:%M:%S.%fZ"))

    assert (key(first) < key(second)) == (first < second)
