"""Times as other tools write them into issue stores."""

import calendar

from hypothesis import strategies as st


@st.composite
def foreign_times(draw):
    """A valid time in `SIMPLE_STAMP` form: a real day, a leap second now and then, and no
    fraction or 1 to 9 digits, Go-trimmed or with trailing zeros (all zeros too)."""
    year = draw(st.integers(0, 9999))
    month = draw(st.integers(1, 12))
    day = draw(st.integers(1, calendar.monthrange(max(year, 1), month)[1] if year else 28))
    clock = (draw(st.integers(0, 23)), draw(st.integers(0, 59)), draw(st.integers(0, 60)))
    stamp = f"{year:04d}-{month:02d}-{day:02d}T{clock[0]:02d}:{clock[1]:02d}:{clock[2]:02d}"
    digits = draw(st.none() | st.text(alphabet="0123456789", min_size=1, max_size=9))
    if digits is not None and draw(st.booleans()):
        digits = digits.rstrip("0") or None  # Go's RFC3339Nano
    return stamp + ("" if digits is None else "." + digits) + "Z"
