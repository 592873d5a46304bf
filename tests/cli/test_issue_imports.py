"""Hot issue commands stay off heavy imports (pydantic, yaml, dateutil): agents loop on them."""

import subprocess
import sys

import pytest

from tests.cli.test_issue import row, seed

HOT = [
    ("issue", "ready", "--json"),
    ("issue", "list", "--json"),
    ("issue", "claim-next", "--assignee", "w", "--json"),
    ("issue", "claim", "bd-1", "--assignee", "w", "--json"),
    ("issue", "update", "bd-1", "--status", "closed", "--json"),
    ("issue", "lease-projection", "--json"),
    ("dep", "diagnostics", "--json"),
]
HEAVY = ("pydantic", "yaml", "dateutil", "filelock")


@pytest.mark.parametrize("argv", HOT, ids=" ".join)
def test_hot_issue_commands_do_not_import_heavy_modules(tmp_path, argv):
    seed(tmp_path, row("bd-1"))
    probe = (
        "import sys, runpy\n"
        f"sys.argv = ['premath', *{list(argv)!r}]\n"
        "try:\n"
        "    runpy.run_module('premath', run_name='__main__')\n"
        "except SystemExit as exit:\n"
        "    assert exit.code == 0, exit.code\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stderr
