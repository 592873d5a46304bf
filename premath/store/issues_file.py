"""The issues store on disk: read, encode, and the reference's mutation protocol.

Bytes (issue-memory-and-loops.md §A1-§A2): one compact row per line in the reference's field
order, the file sorted by id and rewritten whole and atomically. A mutation holds
`<issues path>.lock`, a marker created exclusively with `pid=`/`utc=` lines and removed on
release, the protocol the Rust tool uses, so both can work on one store at once. Ours breaks a
marker whose pid is dead on this host and waits up to a configurable timeout (the reference gives
up after about half a second and never recovers a stale marker). Readers take no lock: the
rename shows them the old file or the new one.
"""

import math
import os
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import orjson

from premath.errors import ArtifactInvalid, IoFailure, NotFound
from premath.models.issue_row import IssueRow, RowInvalid, check_row, dependency_sort_key
from premath.store.atomic import write_atomic
from premath.store.locks import hold_marker
from premath.text import rust_trim
from premath.timefmt import epoch_nanos, format_autosi_z

DEFAULT_ISSUES_PATH = ".premath/issues.jsonl"

IssueMap = dict[str, IssueRow]
"""Issues by id. Insertion order is not meaningful; writers sort by id."""

T = TypeVar("T")


def lock_path(issues_path: str | os.PathLike[str]) -> str:
    """`<issues path>.lock`: the suffix is appended to the whole file name, as the reference does."""
    return f"{os.fspath(issues_path)}.lock"


def serde_float(value: float) -> str:
    """A float as serde_json writes it (ryu): `1e16`, `1.5e-7`, `0.1`, `2.0`, `-0.0`.

    Python's repr gives the same shortest digits; only the layout differs (`1e+16`, `1.5e-07`).
    """
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    text = repr(value)
    sign = ""
    if text[0] == "-":
        sign, text = "-", text[1:]
    mantissa, _, exponent_text = text.partition("e")
    whole, _, fraction = mantissa.partition(".")
    exponent = (int(exponent_text) if exponent_text else 0) - len(fraction)
    digits = (whole + fraction).lstrip("0")
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    digits = stripped
    length = len(digits)
    point = length + exponent  # 10^(point-1) <= |value| < 10^point
    if 0 <= exponent and point <= 16:
        body = digits + "0" * exponent + ".0"
    elif 0 < point <= 16:
        body = f"{digits[:point]}.{digits[point:]}"
    elif -5 < point <= 0:
        body = "0." + "0" * -point + digits
    elif length == 1:
        body = f"{digits}e{point - 1}"
    else:
        body = f"{digits[0]}.{digits[1:]}e{point - 1}"
    return sign + body


def _serde_numbers(value: Any) -> Any:
    if type(value) is float:
        return orjson.Fragment(serde_float(value).encode())
    if type(value) is dict:
        return {key: _serde_numbers(item) for key, item in value.items()}
    if type(value) is list:
        return [_serde_numbers(item) for item in value]
    return value


def encode_row(row: IssueRow) -> bytes:
    """One stored line: compact, field order, serde's float layout in `metadata`, `\\n`."""
    if "metadata" in row:
        row = {**row, "metadata": _serde_numbers(row["metadata"])}  # type: ignore[typeddict-item]
    return orjson.dumps(row) + b"\n"


def canonical_line(row: IssueRow) -> bytes:
    """The snapshot form of a row: the stored line with dependencies in canonical order."""
    dependencies = row.get("dependencies")
    if dependencies is not None and len(dependencies) > 1:
        row = {**row, "dependencies": sorted(dependencies, key=dependency_sort_key)}
    return encode_row(row)


def encode_store(issues: IssueMap) -> bytes:
    return b"".join([encode_row(issues[issue_id]) for issue_id in sorted(issues)])


def _trimmed(raw: bytes) -> bytes:
    line = raw.strip()
    if line and (line[0] >= 0x80 or line[-1] >= 0x80):
        # Rust's trim also strips non-ASCII white space (NBSP, U+2028, ...).
        line = rust_trim(line.decode("utf-8")).encode("utf-8")
    return line


def parse_issues(data: bytes, path: str, now_text: str, *, tolerate_torn_tail: bool) -> IssueMap:
    """Decode a whole issues file, the reference's way (§A2 "Read").

    NUL and non-UTF-8 bytes are refused; blank lines and `#` lines are skipped; line numbers
    count from 1 including skipped lines; the last row of an id wins. With
    `tolerate_torn_tail`, an unterminated last line that does not parse (a writer that is not
    atomic was interrupted) is skipped with a warning instead of failing the whole read.
    """
    if b"\0" in data:
        raise ArtifactInvalid(f"corrupted substrate: {path}: contains NUL byte(s)")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        raise ArtifactInvalid(
            f"corrupted substrate: {path}: contains non-UTF-8 byte sequence(s)"
        ) from None
    issues: IssueMap = {}
    lines = data.split(b"\n")
    last_number = len(lines)
    loads = orjson.loads
    for number, raw in enumerate(lines, start=1):
        line = _trimmed(raw)
        if not line or line[0] == 0x23:  # '#'
            continue
        try:
            row = check_row(loads(line), now_text)
        except orjson.JSONDecodeError as exc:
            if tolerate_torn_tail and number == last_number:
                sys.stderr.write(
                    f"warning: {path}:{number}: skipped an incomplete last line (a writer was "
                    "interrupted); the next issue mutation will refuse the file until it is fixed\n"
                )
                continue
            raise ArtifactInvalid(f"{path}: line {number}: parse error: {exc}") from None
        except RowInvalid as exc:
            raise ArtifactInvalid(f"{path}: line {number}: parse error: {exc}") from None
        issues[row["id"]] = row
    return issues


def _read_bytes(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise NotFound(f"issues file not found: {path}") from None
    except OSError as exc:
        raise IoFailure(f"failed to read issues file {path}: {exc.strerror or exc}") from None


def load_issues(path: str, now: datetime, *, tolerate_torn_tail: bool = True) -> IssueMap:
    """Read the store without locking (readers rely on atomic rename). Missing: NotFound."""
    now_text = format_autosi_z(epoch_nanos(now))
    return parse_issues(_read_bytes(path), path, now_text, tolerate_torn_tail=tolerate_torn_tail)


def write_issues(path: str, issues: IssueMap) -> None:
    """Replace the store atomically: every row, sorted by id (caller holds the lock)."""
    try:
        write_atomic(path, encode_store(issues))
    except OSError as exc:
        raise IoFailure(f"failed to write issues file {path}: {exc.strerror or exc}") from None


def mutate_store(
    path: str,
    mutate: Callable[[IssueMap], tuple[T, bool]],
    *,
    now: datetime,
    timeout_s: float,
) -> T:
    """Run `mutate` on the store under `<path>.lock`; save only when it reports a change.

    A missing file is an empty store. The store is saved whole and atomically, sorted by id; on
    any error the file is left as it was and the lock is still released.
    """
    marker = lock_path(path)
    with hold_marker(marker, timeout_s=timeout_s, busy_message=f"issue-memory lock busy: {marker}"):
        if os.path.exists(path):
            issues = load_issues(path, now, tolerate_torn_tail=False)
        else:
            issues = {}
        value, changed = mutate(issues)
        if changed:
            write_issues(path, issues)
    return value


def require_store_file(path: str) -> None:
    """Commands that edit existing issues refuse a missing file before taking the lock."""
    if not os.path.exists(path):
        raise NotFound(f"issues file not found: {path}")
