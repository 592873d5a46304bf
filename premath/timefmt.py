"""The timestamp shapes the reference writes and the parsers it applies, each under one name."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable
from operator import itemgetter

from premath.lean import UTC, datetime
from premath.text import RUST_WHITE_SPACE

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from typing import Any

_DIGITS_AS_ZERO = str.maketrans("123456789", "000000000")
_STRICT_HEADS = frozenset({"0000-00-00T00:00:00", "0000-00-00t00:00:00"})


def _all_digits(text: str) -> bool:
    """Whether `text` is ASCII digits only (`str.isdigit` takes other scripts' digits too)."""
    return text.translate(_DIGITS_AS_ZERO) == "0" * len(text)


def _strict_tail(rest: str) -> tuple[str, str] | None:
    """(fraction digits, offset) of what follows `YYYY-MM-DDTHH:MM:SS` in a strict RFC3339
    time, `(\\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})`; None when it is not that."""
    if rest[-1:] in ("Z", "z"):
        middle, offset = rest[:-1], rest[-1]
    elif len(rest) >= 6 and rest[-6] in "+-" and rest[-3] == ":":
        middle, offset = rest[:-6], rest[-6:]
        if not _all_digits(offset[1:3] + offset[4:6]):
            return None
    else:
        return None
    if not middle:
        return "", offset
    if middle[0] != "." or len(middle) < 2 or not _all_digits(middle[1:]):
        return None
    return middle[1:], offset


@functools.cache
def compiled(source: str) -> re.Pattern[str]:
    """A pattern compiled on first use: compiling this module's patterns at import cost more
    than a whole hot command's own work (start-up budget), and `re` itself is not imported until
    a pattern is needed."""
    import re

    return re.compile(source)


NANOS_PER_SECOND = 1_000_000_000


def format_seconds_z(moment: datetime) -> str:
    """`2026-02-22T00:00:00Z`: harness artifacts; the fraction is truncated, as chrono's Secs."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def session_stamp(moment: datetime) -> str:
    """`20260224T222312Z`, the time part of generated session ids."""
    return moment.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def is_leap_year(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _is_calendar_day(year: int, month: int, day: int) -> bool:
    """A real day of the proleptic Gregorian calendar: Feb 29 in leap years only."""
    return 1 <= month <= 12 and 1 <= day <= days_in_month(year, month)


def days_in_month(year: int, month: int) -> int:
    if month == 2:
        return 29 if is_leap_year(year) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 in the proleptic Gregorian calendar (year 0 included)."""
    year -= month <= 2
    era = year // 400  # floor division already rounds negative years down
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def parse_strict_rfc3339(value: str) -> tuple[int, int] | None:
    """The instant of a strict RFC3339 string as (UTC epoch seconds, nanos), or None.

    Matches chrono 0.4.43 `parse_from_rfc3339` (specs/harness-trajectory.md "Row schema"): `T`/`t`,
    `Z`/`z` or `±HH:MM`, year 0000 accepted, a leap second `:60` at any minute (kept as :59 plus a
    second's worth of nanos, so it sorts inside its minute), fraction digits past the 9th ignored.
    """
    if value[:19].translate(_DIGITS_AS_ZERO) not in _STRICT_HEADS:
        return None
    tail = _strict_tail(value[19:])
    if tail is None:
        return None
    fraction, offset = tail
    year, month, day = int(value[:4]), int(value[5:7]), int(value[8:10])
    hour, minute, second = int(value[11:13]), int(value[14:16]), int(value[17:19])
    if not _is_calendar_day(year, month, day) or hour > 23 or minute > 59 or second > 60:
        return None
    offset_seconds = 0
    if offset not in ("Z", "z"):
        offset_hours, offset_minutes = int(offset[1:3]), int(offset[4:6])
        if offset_hours > 23 or offset_minutes > 59:
            return None
        offset_seconds = (offset_hours * 3600 + offset_minutes * 60) * (
            -1 if offset[0] == "-" else 1
        )
    nanos = int(fraction[:9].ljust(9, "0"))
    if second == 60:
        second, nanos = 59, nanos + NANOS_PER_SECOND
    seconds = days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second
    return seconds - offset_seconds, nanos


# Issue rows (specs/issue-memory.md "Store format"): chrono's relaxed RFC3339 `FromStr` on read,
# serde's AutoSi form with `Z` on write, `to_rfc3339()` (`+00:00`) for lease fields in CLI output.
# Instants are integer epoch nanoseconds: `datetime` stops at microseconds, chrono does not.

# chrono's NaiveDate range (years -262144..=262143 in 0.4.43).
_MIN_YEAR, _MAX_YEAR = -262144, 262143


class _Scan:
    """A cursor over the input with chrono's `scan` helpers (format/scan.rs, parse.rs)."""

    __slots__ = ("pos", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def skip_space(self) -> None:
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos] in RUST_WHITE_SPACE:
            pos += 1
        self.pos = pos

    def literal(self, char: str) -> bool:
        if self.text.startswith(char, self.pos):
            self.pos += len(char)
            return True
        return False

    def number(self, max_digits: int) -> int | None:
        """1..max_digits ASCII digits (chrono's `scan::number(s, 1, max)`)."""
        text, start = self.text, self.pos
        end = start
        while end < len(text) and end - start < max_digits and "0" <= text[end] <= "9":
            end += 1
        if end == start:
            return None
        self.pos = end
        return int(text[start:end])

    def numeric(self, max_digits: int, signed: bool = False) -> int | None:
        """A chrono `Item::Numeric`: leading white space skipped; a signed year takes any width."""
        self.skip_space()
        if signed and self.pos < len(self.text) and self.text[self.pos] in "+-":
            negative = self.text[self.pos] == "-"
            self.pos += 1
            value = self.number(10**6)
            if value is None:
                return None
            return -value if negative else value
        return self.number(max_digits)

    def fraction(self) -> int | None:
        """chrono's `Fixed::Nanosecond`: optional `.digits`, digits past the 9th ignored."""
        if not self.literal("."):
            return 0
        start = self.pos
        digits = self.number(9)
        if digits is None:
            return None
        scaled = digits * int(10 ** (9 - (self.pos - start)))
        while self.pos < len(self.text) and "0" <= self.text[self.pos] <= "9":
            self.pos += 1
        return scaled

    def offset(self) -> int | None:
        """`UTC`, `Z`/`z`, or a sign (`+`, `-`, U+2212), HH, `:` or spaces, MM."""
        self.skip_space()
        text, pos = self.text, self.pos
        if text[pos : pos + 3].upper() == "UTC" and len(text[pos : pos + 3]) == 3:
            self.pos += 3
            return 0
        if text.startswith(("Z", "z"), pos):
            self.pos += 1
            return 0
        if pos >= len(text) or text[pos] not in "+-\u2212":
            return None
        sign = 1 if text[pos] == "+" else -1
        pos += 1
        hours = text[pos : pos + 2]
        if len(hours) < 2 or not hours.isascii() or not hours.isdigit():
            return None
        pos += 2
        while pos < len(text) and (text[pos] == ":" or text[pos] in RUST_WHITE_SPACE):
            pos += 1
        minutes = text[pos : pos + 2]
        if len(minutes) < 2 or not minutes.isascii() or not minutes.isdigit() or minutes[0] > "5":
            return None
        self.pos = pos + 2
        return sign * (int(hours) * 3600 + int(minutes) * 60)


def _relaxed_parts(value: str) -> tuple[int, int] | None:
    """(UTC epoch seconds, nanos) of chrono's relaxed RFC3339; nanos >= 1e9 marks a leap second."""
    scan = _Scan(value)
    year = scan.numeric(4, signed=True)
    if year is None:
        return None
    scan.skip_space()
    if not scan.literal("-") or (month := scan.numeric(2)) is None:
        return None
    scan.skip_space()
    if not scan.literal("-") or (day := scan.numeric(2)) is None:
        return None
    if scan.pos >= len(value) or value[scan.pos] not in "Tt ":
        return None
    scan.pos += 1
    if (hour := scan.numeric(2)) is None:
        return None
    scan.skip_space()
    if not scan.literal(":") or (minute := scan.numeric(2)) is None:
        return None
    scan.skip_space()
    if not scan.literal(":") or (second := scan.numeric(2)) is None:
        return None
    if (nanos := scan.fraction()) is None:
        return None
    scan.skip_space()
    if (offset := scan.offset()) is None:
        return None
    scan.skip_space()
    if scan.pos != len(value):
        return None
    if not _MIN_YEAR <= year <= _MAX_YEAR or not _is_calendar_day(year, month, day):
        return None
    if hour > 23 or minute > 59 or second > 60:
        return None
    if abs(offset) >= 86400:
        return None
    if second == 60:
        second, nanos = 59, nanos + NANOS_PER_SECOND
    seconds = days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second
    return seconds - offset, nanos


def parse_relaxed(value: str) -> int | None:
    """UTC epoch nanoseconds of chrono's relaxed RFC3339 `FromStr` (issue rows), or None.

    Accepts `T`, `t` or a space between date and time, white space between components, unpadded
    numbers, a signed year of any width, any fraction (digits past the 9th ignored), and `Z`/`z`,
    `UTC` (any case), `±HH:MM`, `±HHMM` or `±HH MM` (U+2212 as minus too). A leap second `:60`
    counts as the following second here; `normalize_relaxed` keeps it as written.
    """
    parts = _relaxed_parts(value)
    return None if parts is None else parts[0] * NANOS_PER_SECOND + parts[1]


def _civil_from_days(days: int) -> tuple[int, int, int]:
    days += 719468
    era = days // 146097  # floor division: no C-style adjustment for negative days
    day_of_era = days - era * 146097
    year_of_era = (
        day_of_era - day_of_era // 1460 + day_of_era // 36524 - day_of_era // 146096
    ) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    month_index = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * month_index + 2) // 5 + 1
    month = month_index + 3 if month_index < 10 else month_index - 9
    return year_of_era + era * 400 + (month <= 2), month, day


def _autosi(seconds: int, nanos: int, suffix: str) -> str:
    """chrono's `write_rfc3339` with `SecondsFormat::AutoSi` (nanos >= 1e9: a leap second)."""
    leap = nanos >= NANOS_PER_SECOND
    if leap:
        nanos -= NANOS_PER_SECOND
    days, rest = divmod(seconds, 86400)
    year, month, day = _civil_from_days(days)
    hour, rest = divmod(rest, 3600)
    minute, second = divmod(rest, 60)
    second += leap
    year_text = f"{year:04d}" if 0 <= year <= 9999 else f"{year:+05d}"
    if nanos == 0:
        fraction = ""
    elif nanos % 1_000_000 == 0:
        fraction = f".{nanos // 1_000_000:03d}"
    elif nanos % 1_000 == 0:
        fraction = f".{nanos // 1_000:06d}"
    else:
        fraction = f".{nanos:09d}"
    return (
        f"{year_text}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}{fraction}{suffix}"
    )


def format_autosi_z(epoch_nanos: int) -> str:
    """`2026-02-23T03:33:09.338421Z`: issue rows (serde form; 0, 3, 6 or 9 fraction digits)."""
    seconds, nanos = divmod(epoch_nanos, NANOS_PER_SECOND)
    return _autosi(seconds, nanos, "Z")


def format_offset(epoch_nanos: int) -> str:
    """`2026-02-23T03:33:09.338421+00:00`: lease fields in CLI output (chrono `to_rfc3339`)."""
    seconds, nanos = divmod(epoch_nanos, NANOS_PER_SECOND)
    return _autosi(seconds, nanos, "+00:00")


def normalize_relaxed(value: str) -> str | None:
    """The stored (serde) form of a relaxed RFC3339 value, or None when chrono rejects it."""
    parts = _relaxed_parts(value)
    return None if parts is None else _autosi(parts[0], parts[1], "Z")


def epoch_nanos(moment: datetime) -> int:
    """Epoch nanoseconds of an aware datetime (microsecond precision, as `datetime` holds)."""
    delta = moment.astimezone(UTC) - _EPOCH
    return (delta.days * 86400 + delta.seconds) * NANOS_PER_SECOND + delta.microseconds * 1000


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


# --- the stored form of issue-row times: one grammar ------------------------------------------
# serde's AutoSi `Z` form (issue-memory §A1): `YYYY-MM-DDTHH:MM:SS`, a real calendar day (Feb 29
# in leap years only), a leap second `:60` allowed, then no fraction or 3, 6 or 9 digits whose
# last three are not `000` (AutoSi would have printed fewer), then `Z`. Every fast check of a
# stored time (one value, a batch, a whole issues file) is built from these pieces.

_DAYS = {
    31: "(?:0[1-9]|[12][0-9]|3[01])",
    30: "(?:0[1-9]|[12][0-9]|30)",
    28: "(?:0[1-9]|1[0-9]|2[0-8])",
}
_MONTH_DAY = f"(?:(?:0[13578]|1[02])-{_DAYS[31]}|(?:0[469]|11)-{_DAYS[30]}|02-{_DAYS[28]})"
_LEAP_YEAR = r"(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)"
_DATE = rf"(?:[0-9]{{4}}-{_MONTH_DAY}|{_LEAP_YEAR}-02-29)"
_CLOCK = r"T(?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)"
STORED_STAMP = rf"{_DATE}{_CLOCK}(?:\.(?:[0-9]{{3}}|[0-9]{{6}}|)(?!000)[0-9]{{3}})?Z"
"""The regex source of one stored time (no anchors, no groups)."""
SIMPLE_STAMP = rf"{_DATE}{_CLOCK}(?:\.[0-9]{{1,9}})?Z"
"""A stored time but for the fraction, which may have 1 to 9 digits (Go's RFC3339Nano,
hand-written stores): normalised by `stored_forms` without the relaxed parser (more digits
than chrono keeps take the relaxed parser)."""

# Possessive: the engine keeps no backtracking state per stamp (a plain `*` kept ~700 bytes
# each, 190 MB for a 100k-issue store).
_ALL_SIMPLE = rf"(?:{SIMPLE_STAMP}\n)*+{SIMPLE_STAMP}"
_FRACTION_PAD = ("", "00", "0", "", "00", "0", "", "00", "0", "")
_FRACTION_DOT = ("",) + (".",) * 9


_STORED_SHAPES = frozenset(
    "0000-00-00T00:00:00" + fraction + "Z" for fraction in ("", ".000", ".000000", ".000000000")
)
_MINUTE_TEXTS = frozenset(f"{n:02}" for n in range(60))
_CLOCK_FIELDS = (
    (itemgetter(slice(11, 13)), frozenset(f"{n:02}" for n in range(24))),
    (itemgetter(slice(14, 16)), _MINUTE_TEXTS),
    (itemgetter(slice(17, 19)), _MINUTE_TEXTS | {"60"}),
)
"""Where a stored time's hour, minute and second lie (digits already checked), and their
allowed texts."""
_DATE_PART = itemgetter(slice(0, 10))
_LAST_THREE = itemgetter(slice(-4, -1))
"""A stored time's last three fraction digits (`:SS` when it has no fraction)."""


def _is_calendar_date(date: str) -> bool:
    """`YYYY-MM-DD` (digits already checked) names a real day."""
    return _is_calendar_day(int(date[:4]), int(date[5:7]), int(date[8:10]))


def stamp_is_stored(value: str) -> bool:
    """`stamps_are_stored` for one time, in one pass over it (lease times, one at a time)."""
    return (
        value.translate(_DIGITS_AS_ZERO) in _STORED_SHAPES
        and all(field(value) in allowed for field, allowed in _CLOCK_FIELDS)
        and _LAST_THREE(value) != "000"
        and _is_calendar_date(_DATE_PART(value))
    )


def stamps_are_stored(stamps: list[str]) -> bool:
    """True when every string is a time in `STORED_STAMP`'s grammar.

    C-level passes that need no `re` (importing and compiling it costs a hot command more than
    a small store's whole check): each shape (digits as `0`), then each distinct date, hour,
    minute, second and fraction ending. A store of 10k lines or more is proved in stored form
    by one regex over its text instead (`models/issue_row.text_form`). `STORED_STAMP` is this
    grammar's oracle: tests/issues/test_timestamps.py holds both to the same answers."""
    if not stamps:
        return True
    shapes = set(map(str.translate, stamps, itertools.repeat(_DIGITS_AS_ZERO)))
    if not shapes <= _STORED_SHAPES:
        return False
    return (
        all(set(map(field, stamps)) <= allowed for field, allowed in _CLOCK_FIELDS)
        and "000" not in set(map(_LAST_THREE, stamps))
        and all(map(_is_calendar_date, set(map(_DATE_PART, stamps))))
    )


def _joined(stamps: list[str]) -> str | None:
    joined = "\n".join(stamps)
    return joined if joined.count("\n") == len(stamps) - 1 else None


def autosi_fraction(stamp: str) -> str:
    """The stored form of a `SIMPLE_STAMP` (checked by the caller): trailing zeros of the
    fraction dropped, then the fraction padded to 3, 6 or 9 digits."""
    digits = stamp[20:-1].rstrip("0")
    return stamp[:19] + _FRACTION_DOT[len(digits)] + digits + _FRACTION_PAD[len(digits)] + "Z"


PADDED_ENDS = ("Z",) * 22 + ("00Z", "0Z", "Z") * 3
"""By length, how a `SIMPLE_STAMP` whose last digit is not 0 ends in stored form: AutoSi drops
trailing zeros only, so it pads the fraction with zeros to 3, 6 or 9 digits and keeps the rest."""


def store_simple_stamps(records: Iterable[dict[str, Any]], keys: tuple[str, ...]) -> None:
    """Each of `keys` present in each record, a `SIMPLE_STAMP` (checked by the caller), set in
    place to its stored form: `autosi_fraction`'s, by padding alone when no zero ends it (one
    string operation a time: a 100k-issue store holds some 300k)."""
    ends = PADDED_ENDS
    for record in records:
        for key in keys:
            stamp = record.get(key)
            if stamp is not None:
                record[key] = (
                    stamp[:-1] + ends[len(stamp)] if stamp[-2] != "0" else autosi_fraction(stamp)
                )


def stored_forms(stamps: list[str]) -> list[str] | None:
    """The stored form of each time when all are `SIMPLE_STAMP`s (checked in one pass), else
    None: the caller then takes the relaxed parser. Equal to `normalize_relaxed` on them."""
    if not stamps:
        return []
    joined = _joined(stamps)
    if joined is None or compiled(_ALL_SIMPLE).fullmatch(joined) is None:
        return None
    return list(map(autosi_fraction, stamps))


def iso8601_problem(text: str) -> str | None:
    """Why `datetime.fromisoformat` refuses `text` (a `Z` suffix read as UTC), None if it does
    not: the ISO 8601 check ATIF (Harbor's pydantic model) and harness rows apply."""
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        return str(exc)
    return None
