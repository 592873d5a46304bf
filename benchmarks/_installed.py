"""premath as `pip install .` leaves it, for the benchmarks that time one process per call.

An editable install (`pip install -e`, the README's test command) runs a finder from a `.pth`
file at every interpreter start: about 8 ms that the bare interpreter pays too, and modules
(pathlib, re) that premath then finds already imported. Measured there, start-up ratios look
better than what a user of an installed premath sees. This copy has no finder: a fresh venv
whose site-packages holds a compiled copy of the `premath` package and a `.pth` line naming
the benchmarking venv's site-packages for the dependencies (a plain path entry: the `.pth`
files found there are not run).
"""

import compileall
import contextlib
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import premath


@contextlib.contextmanager
def installed_python() -> Iterator[str]:
    """The interpreter of a throwaway venv where `premath` is installed, not editable."""
    with tempfile.TemporaryDirectory(prefix="premath-installed-") as folder:
        venv = Path(folder) / "venv"
        subprocess.run(
            [sys._base_executable, "-m", "venv", "--without-pip", str(venv)],  # type: ignore[attr-defined]
            check=True,
        )
        python = venv / "bin" / "python"
        site = subprocess.run(
            [str(python), "-I", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        dependencies = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
        Path(site, "premath-bench-dependencies.pth").write_text("\n".join(sorted(dependencies)))
        package = Path(site) / "premath"
        shutil.copytree(
            Path(premath.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__")
        )
        compileall.compile_dir(package, quiet=1)
        yield str(python)
