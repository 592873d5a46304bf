"""Which premath made a run: its version and, when it runs from a git checkout, the commit.

The commit is read from the files of `.git` beside the package (HEAD, then the loose ref or
`packed-refs`; worktrees through `gitdir:` and `commondir`), never by spawning git: a run must not
depend on a git binary. An installed wheel has no `.git`: `setup.py` stamps the commit it was built
from into the package (`premath/BUILD_COMMIT`), read as the fallback; None when neither exists.
"""

import re
from pathlib import Path

_SHA = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None


def _git_dir(source_root: Path) -> Path | None:
    dot_git = source_root / ".git"
    if dot_git.is_dir():
        return dot_git
    pointer = _read(dot_git) if dot_git.is_file() else None
    if pointer and pointer.startswith("gitdir:"):
        target = Path(pointer.removeprefix("gitdir:").strip())
        return target if target.is_absolute() else source_root / target
    return None


def _resolve_ref(git_dir: Path, ref: str) -> str | None:
    common = _read(git_dir / "commondir")
    roots = [git_dir] + ([git_dir / common] if common else [])
    for root in roots:
        loose = _read(root / ref)
        if loose and _SHA.fullmatch(loose):
            return loose
        for line in (_read(root / "packed-refs") or "").splitlines():
            sha, _, name = line.partition(" ")
            if name == ref and _SHA.fullmatch(sha):
                return sha
    return None


BUILD_STAMP = Path(__file__).resolve().parents[1] / "BUILD_COMMIT"


def checkout_commit(source_root: Path) -> str | None:
    """The commit the git checkout at `source_root` is at, or None."""
    git_dir = _git_dir(source_root)
    head = _read(git_dir / "HEAD") if git_dir else None
    if git_dir is None or not head:
        return None
    if head.startswith("ref:"):
        return _resolve_ref(git_dir, head.removeprefix("ref:").strip())
    return head if _SHA.fullmatch(head) else None


def commit_sha(source_root: Path | None = None, stamp: Path = BUILD_STAMP) -> str | None:
    """The commit premath runs from: its checkout's, else the build stamp's, else None."""
    found = checkout_commit(source_root or Path(__file__).resolve().parents[2])
    if found is not None:
        return found
    stamped = _read(stamp)
    return stamped if stamped and _SHA.fullmatch(stamped) else None
