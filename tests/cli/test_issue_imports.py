"""Hot issue commands stay off heavy imports (pydantic, yaml): agents loop on them."""

import pytest

from tests.cli.test_issue import row, seed
from tests.support.cli import heavy_imports_of

HOT = [
    ("issue", "ready", "--json"),
    ("issue", "list", "--json"),
    ("issue", "claim-next", "--assignee", "w", "--json"),
    ("issue", "claim", "bd-1", "--assignee", "w", "--json"),
    ("issue", "update", "bd-1", "--status", "closed", "--json"),
    ("issue", "lease-projection", "--json"),
    ("dep", "diagnostics", "--json"),
]


@pytest.mark.parametrize("argv", HOT, ids=" ".join)
def test_hot_issue_commands_do_not_import_heavy_modules(tmp_path, argv):
    seed(tmp_path, row("bd-1"))
    assert heavy_imports_of(argv, tmp_path) == (0, [])
