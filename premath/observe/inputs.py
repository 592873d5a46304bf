"""What `observe-build` reads (observation.md §2): the witness folder and issue memory.

Values are read as the reference reads them: `text` trims a string and drops blanks, `texts`
keeps the trimmed non-blank strings of an array, deduplicated and sorted. Issue rows are read
as plain JSON objects, not as issue-memory rows, so a store the stricter issue commands refuse
(hand-written rows, camelCase keys) still feeds the surface exactly as it feeds the reference's.

`InputReader` reads each file once per change: with `cache=True` (the live server) a file whose
identity (device, inode, size, mtime) is unchanged is not read again. Every read is bounded and
refuses FIFOs and devices (store/files.py), so a hostile witness folder cannot stall a build.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import orjson

from premath.errors import ArtifactInvalid, InputInvalid
from premath.observe.facts import IssueFacts, issue_facts, text
from premath.store.documents import os_error_text
from premath.store.files import DOCUMENT_CAP, STORE_CAP, ReadCap, read_bounded
from premath.store.issues_file import FileIdentity, file_identity
from premath.text import rust_trim

Document = dict[str, Any]
T = TypeVar("T")

LATEST_FILES = ("latest-required.json", "latest-delta.json", "latest-decision.json")
"""The three fixed witnesses, in the order the reference reads them."""
SKIPPED_PREFIXES = ("latest-", "proj1_")
"""Names never read as instruction witnesses (observation.md §2.2)."""
INSTRUCTION_WITNESS_KIND = "ci.instruction.v1"


class BuildInputInvalid(ArtifactInvalid):
    """A witness or the issue memory cannot be read; `cause` is the text after the lead."""

    def __init__(self, cause: str) -> None:
        super().__init__(cause)
        self.cause = cause


def texts(value: Any) -> list[str]:
    """The trimmed non-blank strings of a JSON array, deduplicated, sorted; else `[]`."""
    if not isinstance(value, list):
        return []
    return sorted({t for t in (text(item) for item in value) if t is not None})


def rust_extension_is_json(name: str) -> bool:
    """Rust's `Path::extension() == Some("json")`: a dotfile's only dot starts no extension."""
    stem, dot, extension = name.rpartition(".")
    return bool(dot) and extension == "json" and stem != ""


def rust_file_stem(name: str) -> str:
    stem, dot, _ = name.rpartition(".")
    return stem if dot and stem else name


def is_instruction_candidate(name: str) -> bool:
    """Read as a possible instruction witness: `*.json`, not `latest-*` or `proj1_*`."""
    return rust_extension_is_json(name) and not name.startswith(SKIPPED_PREFIXES)


@dataclass
class InputReader:
    """Reads witnesses and issue rows; with `cache`, unchanged files are not read again."""

    cache: bool = False
    _documents: dict[str, tuple[FileIdentity, Document]] = field(default_factory=dict)
    _issues: dict[str, tuple[FileIdentity, list[IssueFacts]]] = field(default_factory=dict)
    _lines: dict[str, dict[str, IssueFacts]] = field(default_factory=dict)
    """Per issues file, the facts of each line last read: a rewrite re-parses changed lines."""
    _listings: dict[str, tuple[FileIdentity, list[str]]] = field(default_factory=dict)
    reads: int = 0
    """Files actually read (tests count them)."""

    def _read(self, path: str, cap: ReadCap) -> bytes:
        self.reads += 1
        try:
            return read_bounded(path, cap)
        except OSError as exc:
            raise BuildInputInvalid(f"failed to read {path}: {os_error_text(exc)}") from None
        except InputInvalid as exc:
            raise BuildInputInvalid(f"failed to read {path}: {exc.message}") from None

    def _cached(self, table: dict[str, tuple[FileIdentity, Any]], path: str) -> Any:
        if not self.cache:
            return None
        entry = table.get(path)
        if entry is not None and entry[0] == file_identity(path):
            return entry[1]
        return None

    def _keep(
        self, table: dict[str, tuple[FileIdentity, Any]], path: str, before: Any, value: Any
    ) -> None:
        if self.cache and before is not None and before == file_identity(path):
            table[path] = (before, value)

    def _remembered(
        self, table: dict[str, tuple[FileIdentity, Any]], path: str, load: Callable[[], T]
    ) -> T:
        """`load()`, or its last result while the file's identity is unchanged (with cache)."""
        found = self._cached(table, path)
        if found is not None:
            return cast(T, found)
        before = file_identity(path)
        value = load()
        self._keep(table, path, before, value)
        return value

    def witness(self, path: str) -> Document | None:
        """A witness object, or None when the file does not exist."""
        if not os.path.exists(path):
            return None
        return dict(self._remembered(self._documents, path, lambda: self._parse_witness(path)))

    def _parse_witness(self, path: str) -> Document:
        data = self._read(path, DOCUMENT_CAP)
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            reason = "EOF while parsing a value" if not data.strip() else str(exc)
            raise BuildInputInvalid(f"failed to parse {path} as JSON: {reason}") from None
        if not isinstance(value, dict):
            raise BuildInputInvalid(f"invalid observation surface: expected object JSON: {path}")
        return value

    def listing(self, directory: str) -> list[str]:
        """Names in the witness folder (unsorted), or [] when it does not exist."""
        if not os.path.exists(directory):
            return []
        return list(self._remembered(self._listings, directory, lambda: _names(directory)))

    def issue_rows(self, path: str) -> list[IssueFacts]:
        """Issue rows by trimmed id (a later row replaces an earlier one), ordered by id."""
        if not os.path.exists(path):
            return []
        if not os.path.isfile(path):
            raise BuildInputInvalid(
                f"invalid observation surface: issues path is not a file: {path}"
            )
        return list(self._remembered(self._issues, path, lambda: self._parse_issues(path)))

    def _parse_issues(self, path: str) -> list[IssueFacts]:
        data = self._read(path, STORE_CAP)
        try:
            content = data.decode("utf-8")
        except UnicodeDecodeError:
            raise BuildInputInvalid(
                f"failed to read {path}: stream did not contain valid UTF-8"
            ) from None
        known = self._lines.get(path) if self.cache else None
        rows, lines = parse_issue_rows(content, path, known)
        if self.cache:
            self._lines[path] = lines
        return rows


def _names(directory: str) -> list[str]:
    try:
        names = os.listdir(directory)
    except OSError as exc:
        raise BuildInputInvalid(f"failed to read {directory}: {os_error_text(exc)}") from None
    return [name for name in names if _is_utf8(name)]


def _is_utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _rust_lines(content: str) -> list[str]:
    """Rust's `str::lines`: split on `\\n`, one trailing `\\r` dropped, no final empty line."""
    lines = content.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def parse_issue_rows(
    content: str, path: str, known: dict[str, IssueFacts] | None = None
) -> tuple[list[IssueFacts], dict[str, IssueFacts]]:
    """The rows ordered by id, and the facts of each line (`known` saves re-parsing lines seen
    before, byte for byte)."""
    by_id: dict[str, IssueFacts] = {}
    lines: dict[str, IssueFacts] = {}
    for number, raw in enumerate(_rust_lines(content), start=1):
        line = rust_trim(raw)
        if not line:
            continue
        facts = None if known is None else known.get(line)
        if facts is None:
            facts = _parse_row(line, path, number)
        lines[line] = facts
        by_id[facts.id] = facts
    return [by_id[issue_id] for issue_id in sorted(by_id)], lines


def _parse_row(line: str, path: str, number: int) -> IssueFacts:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise BuildInputInvalid(
            f"invalid observation surface: invalid jsonl at {path}:{number}: {exc}"
        ) from None
    if not isinstance(value, dict):
        raise BuildInputInvalid(
            f"invalid observation surface: jsonl row must be object at {path}:{number}"
        )
    issue_id = text(value.get("id"))
    if issue_id is None:
        raise BuildInputInvalid(f"invalid observation surface: missing issue id at {path}:{number}")
    return issue_facts(issue_id, value)
