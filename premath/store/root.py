"""Which project a command works on: the nearest folder above holding `.premath/`.

Divergence D16-4: the reference resolves its default paths (`.premath/issues.jsonl`, ...)
against the working folder only, so a command run in a subfolder silently starts a second
`.premath/`. Ours walks up from the working folder to the nearest folder holding `.premath/`,
stopping after the git root (a folder holding `.git`) or at the filesystem root, and never
into the temp folder (`TMPDIR`, else `/tmp`) from below it: a scratch folder made there (a
test's, a conformance runner's) is a project of its own, and a stray `.premath/` in the temp
folder must not capture it. `PREMATH_DIR` (the `.premath` folder itself) overrides the walk; an
explicit path flag always wins. With no `.premath/` found, the git root the walk stopped at is
the root (a first `issue add` in a subfolder starts the project's one store there), else the
working folder.

The root is returned relative to the working folder (`.` when it is the working folder), so
default paths, and the documents that echo them, stay exactly the reference's at the root.
"""

from __future__ import annotations

import os

from premath.errors import InvalidUsage

PREMATH_FOLDER = ".premath"
PREMATH_DIR_ENV = "PREMATH_DIR"


def _from_env(value: str) -> str:
    folder = os.path.normpath(value)
    if not os.path.isdir(folder):
        raise InvalidUsage(
            f"{PREMATH_DIR_ENV}={value} is not a folder: point it at an existing .premath "
            "folder, or unset it"
        )
    if os.path.basename(os.path.abspath(folder)) != PREMATH_FOLDER:
        raise InvalidUsage(
            f"{PREMATH_DIR_ENV}={value} must name a folder called {PREMATH_FOLDER} (the project "
            "root is its parent)"
        )
    return os.path.relpath(os.path.dirname(os.path.abspath(folder)))


def _refuse_file(marker: str) -> InvalidUsage:
    return InvalidUsage(
        f"{marker} is not a folder: premath keeps its state in a .premath folder; "
        "move that file away or pass explicit paths"
    )


def _temp_folder() -> str:
    """Where scratch folders are made (`tempfile.gettempdir`'s first choices, without its
    import cost)."""
    return os.path.abspath(os.environ.get("TMPDIR") or "/tmp")


def discover_root(start: str | None = None) -> str:
    """The project root for default paths, relative to the working folder; see module doc."""
    env_value = os.environ.get(PREMATH_DIR_ENV)
    if env_value:
        return _from_env(env_value)
    here = os.path.abspath(start or os.curdir)
    cwd = os.path.abspath(os.curdir)
    ceiling = _temp_folder()
    folder = here
    while True:
        marker = os.path.join(folder, PREMATH_FOLDER)
        if os.path.isdir(marker):
            return os.path.relpath(folder, cwd)
        if os.path.lexists(marker):
            raise _refuse_file(marker)
        if os.path.lexists(os.path.join(folder, ".git")):
            return os.path.relpath(folder, cwd)
        parent = os.path.dirname(folder)
        if ceiling in (folder, parent) or parent == folder:
            return os.path.relpath(here, cwd)
        folder = parent


def rebase(default_path: str) -> str:
    """A default path (`.premath/...`) under the discovered root."""
    root = discover_root()
    return default_path if root == os.curdir else os.path.join(root, default_path)
