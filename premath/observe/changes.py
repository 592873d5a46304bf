"""Change detection for `observe-serve --live`: has any input of a build changed?

A fingerprint is the identity (device, inode, size, mtime) of every file a build reads: the
witness folder, its three fixed witnesses, each instruction candidate and the issue memory. It
costs a few `stat` calls; the folder is listed again only when its own identity changes (a file
added, removed or renamed into place), and a file in place is re-read only when its identity
changes (inputs.InputReader), so an idle server reads nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from premath.observe.builder import BuildPaths, rust_join
from premath.observe.inputs import LATEST_FILES, is_instruction_candidate
from premath.store.issues_file import FileIdentity, file_identity

Fingerprint = tuple[FileIdentity | None, ...]


@dataclass
class InputWatch:
    paths: BuildPaths
    _folder: FileIdentity | None = None
    _candidates: list[str] = field(default_factory=list)
    _last: Fingerprint | None = None

    def _candidate_paths(self) -> list[str]:
        folder = self.paths.ciwitness_dir
        identity = file_identity(folder)
        if identity != self._folder:
            self._folder = identity
            try:
                names = os.listdir(folder) if identity is not None else []
            except OSError:
                names = []
            self._candidates = sorted(
                rust_join(folder, name) for name in names if is_instruction_candidate(name)
            )
        return self._candidates

    def fingerprint(self) -> Fingerprint:
        files = [
            *(rust_join(self.paths.ciwitness_dir, name) for name in LATEST_FILES),
            *self._candidate_paths(),
            self.paths.issues_path,
        ]
        return (self._folder, *(file_identity(path) for path in files))

    def changed(self) -> bool:
        """True on the first call and whenever the fingerprint differs from the last call's."""
        current = self.fingerprint()
        if current == self._last:
            return False
        self._last = current
        return True
