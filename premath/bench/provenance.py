"""Which premath made a run: its version and, when it runs from a git checkout, the commit.

The commit is read from the checkout's `.git` files (`premath.store.git_checkout`), never by
spawning git. An installed wheel has no `.git`: `setup.py` stamps the commit it was built from
into the package (`premath/BUILD_COMMIT`), read as the fallback; None when neither exists.
"""

from __future__ import annotations

from pathlib import Path

from premath.store.git_checkout import checkout_commit, is_sha, read_text

BUILD_STAMP = Path(__file__).resolve().parents[1] / "BUILD_COMMIT"


def commit_sha(source_root: Path | None = None, stamp: Path = BUILD_STAMP) -> str | None:
    """The commit premath runs from: its checkout's, else the build stamp's, else None."""
    found = checkout_commit(source_root or Path(__file__).resolve().parents[2])
    if found is not None:
        return found
    stamped = read_text(stamp)
    return stamped if stamped and is_sha(stamped) else None
