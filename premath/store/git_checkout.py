"""Which commit a git checkout is at, read from the files of its `.git` (HEAD, then the loose ref
or `packed-refs`; worktrees through `gitdir:` and `commondir`), never by spawning git: a run must
not depend on a git binary. Below `runner/` and `bench/`, which both record it."""

from __future__ import annotations

import re
from pathlib import Path

_SHA = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


def read_text(path: Path) -> str | None:
    """A small text file's stripped content, or None when it cannot be read."""
    try:
        return path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None


def is_sha(text: str) -> bool:
    """A full SHA-1 or SHA-256 object name in lower-case hex."""
    return _SHA.fullmatch(text) is not None


def _git_dir(source_root: Path) -> Path | None:
    dot_git = source_root / ".git"
    if dot_git.is_dir():
        return dot_git
    pointer = read_text(dot_git) if dot_git.is_file() else None
    if pointer and pointer.startswith("gitdir:"):
        target = Path(pointer.removeprefix("gitdir:").strip())
        return target if target.is_absolute() else source_root / target
    return None


def _resolve_ref(git_dir: Path, ref: str) -> str | None:
    common = read_text(git_dir / "commondir")
    roots = [git_dir] + ([git_dir / common] if common else [])
    for root in roots:
        loose = read_text(root / ref)
        if loose and is_sha(loose):
            return loose
        for line in (read_text(root / "packed-refs") or "").splitlines():
            sha, _, name = line.partition(" ")
            if name == ref and is_sha(sha):
                return sha
    return None


def checkout_commit(source_root: Path) -> str | None:
    """The commit the git checkout at `source_root` is at, or None."""
    git_dir = _git_dir(source_root)
    head = read_text(git_dir / "HEAD") if git_dir else None
    if git_dir is None or not head:
        return None
    if head.startswith("ref:"):
        return _resolve_ref(git_dir, head.removeprefix("ref:").strip())
    return head if is_sha(head) else None
