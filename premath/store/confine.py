"""Paths a client names, confined to the roots the server was started with.

A long-running face (the MCP server) reads and writes files that its callers name. One function,
`confine`, is called wherever such a path enters: it resolves every symlink, refuses a path whose
real location lies outside the allowed roots (the repository root, plus any `--allow-path`), and
refuses an existing path of the wrong kind (a FIFO or a device where a file is read, a file where
a folder is meant) before anything opens it, so no call can block on a FIFO or read `/dev/zero`.
The path is returned as given: documents echo it as the reference does (divergence D22-1).

The check and the later open are two system calls; a client of the server cannot create
symlinks (no tool does), so only someone who can already write into the roots could race them.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from premath.errors import RuleRefused
from premath.store.files import file_kind

PathKind = Literal["file", "folder"]


@dataclass(frozen=True)
class PathRoots:
    """The folders client-named paths must resolve into (real paths, symlinks resolved)."""

    roots: tuple[str, ...]

    @classmethod
    def of(cls, repo_root: str, allowed: Iterable[str] = ()) -> PathRoots:
        """The repository root and the explicit allow-list, each resolved once at start-up."""
        return cls(tuple(dict.fromkeys(os.path.realpath(p) for p in (repo_root, *allowed))))

    def holds(self, real: str) -> bool:
        return any(
            real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in self.roots
        )

    def shown(self) -> str:
        return ", ".join(self.roots)


def confine(roots: PathRoots, field: str, path: str, kind: PathKind = "file") -> str:
    """`path` as given, once its real location is inside `roots` and, if it exists, of `kind`.

    A relative path resolves against the working folder, as the file is then opened. A missing
    path is allowed (the caller reports it, or creates it inside the roots)."""
    real = os.path.realpath(path)
    if not roots.holds(real):
        raise RuleRefused(
            "path.outside_root",
            f"{field} `{path}` resolves to {real}, outside the allowed roots ({roots.shown()}); "
            "name a path inside the repository, or start the server with --allow-path DIR",
        )
    try:
        mode = os.stat(real).st_mode
    except OSError:
        return path
    if kind == "file" and not stat.S_ISREG(mode):
        raise RuleRefused(
            "path.not_regular_file",
            f"{field} `{path}` is {file_kind(mode)}, not a regular file; name a file",
        )
    if kind == "folder" and not stat.S_ISDIR(mode):
        raise RuleRefused(
            "path.not_a_folder",
            f"{field} `{path}` is {file_kind(mode)}, not a folder; name a folder",
        )
    return path
