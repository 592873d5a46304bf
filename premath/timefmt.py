"""The timestamp shapes the reference writes and the parsers it applies, each under one name."""

import re
from datetime import UTC, datetime

_STRICT_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(?:\.([0-9]+))?([Zz]|[+-][0-9]{2}:[0-9]{2})"
)

NANOS_PER_SECOND = 1_000_000_000


def format_seconds_z(moment: datetime) -> str:
    """`2026-02-22T00:00:00Z`: harness artifacts; the fraction is truncated, as chrono's Secs."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def session_stamp(moment: datetime) -> str:
    """`20260224T222312Z`, the time part of generated session ids."""
    return moment.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def is_leap_year(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_month(year: int, month: int) -> int:
    if month == 2:
        return 29 if is_leap_year(year) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 in the proleptic Gregorian calendar (year 0 included)."""
    year -= month <= 2
    era = (year if year >= 0 else year - 399) // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def parse_strict_rfc3339(value: str) -> tuple[int, int] | None:
    """The instant of a strict RFC3339 string as (UTC epoch seconds, nanos), or None.

    Matches chrono 0.4.43 `parse_from_rfc3339` (harness-cli.md §3.3): `T`/`t`, `Z`/`z` or
    `±HH:MM`, year 0000 accepted, a leap second `:60` at any minute (kept as :59 plus a second's
    worth of nanos, so it sorts inside its minute), fraction digits past the 9th ignored.
    """
    match = _STRICT_RFC3339.fullmatch(value)
    if match is None:
        return None
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    fraction, offset = match.group(7), match.group(8)
    if not 1 <= month <= 12 or not 1 <= day <= days_in_month(year, month):
        return None
    if hour > 23 or minute > 59 or second > 60:
        return None
    offset_seconds = 0
    if offset not in ("Z", "z"):
        offset_hours, offset_minutes = int(offset[1:3]), int(offset[4:6])
        if offset_hours > 23 or offset_minutes > 59:
            return None
        offset_seconds = (offset_hours * 3600 + offset_minutes * 60) * (-1 if offset[0] == "-" else 1)
    nanos = int((fraction or "")[:9].ljust(9, "0"))
    if second == 60:
        second, nanos = 59, nanos + NANOS_PER_SECOND
    seconds = days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second
    return seconds - offset_seconds, nanos
