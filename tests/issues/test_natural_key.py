"""claim-next's natural id order: the shortcut for ids ending in digits equals the general rule."""

import re

from hypothesis import given
from hypothesis import strategies as st

from premath.issues.leases import natural_key


def _general(issue_id: str) -> tuple[object, ...]:
    parts = re.split(r"([0-9]+)", issue_id)
    return tuple(int(part) if index % 2 else part for index, part in enumerate(parts))


@given(st.text(alphabet="bd-.0123456789xé٣", max_size=12))
def test_the_natural_key_is_the_general_split(issue_id):
    natural_key.cache_clear()
    assert natural_key(issue_id) == _general(issue_id)
