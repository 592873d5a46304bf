"""Build hook: stamp the commit a wheel is built from, since an installed wheel has no `.git`."""

import importlib.util
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def _checkout_commit() -> str | None:
    spec = importlib.util.spec_from_file_location(
        "git_checkout", ROOT / "premath" / "store" / "git_checkout.py"
    )
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    commit: str | None = module.checkout_commit(ROOT)
    return commit


class BuildWithCommitStamp(build_py):
    def run(self) -> None:
        super().run()
        commit = _checkout_commit()
        if commit is not None and not self.editable_mode:
            Path(self.build_lib, "premath", "BUILD_COMMIT").write_text(commit + "\n")


setup(cmdclass={"build_py": BuildWithCommitStamp})
