"""The package's import rules (docs/architecture.md "Layers"), checked on the source itself.

The floors, highest first (`FLOORS` in tools/import_graph.py, the one table):

    8  faces: cli (and __main__), mcp, web
    7  the operation catalogue: ops (issue 32)
    6  the loop and benchmark runs: harness, bench
    5  the observation surface and transport: observe, transport
    4  issue memory: issues
    3  the loop's record, processes and runs, ATIF: record, runner, atif
    2  store    1  models    0  leaf modules

A module imports only from its own floor and the floors below, and no modules or packages import
each other around a loop, not even lazily or for types only. click only in cli/, subprocess only
in runner/process.py, the ASGI stack only in web/ and mcp/, the MCP SDK only in mcp/.
"""

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

from tools.import_graph import (
    FLOORS,
    LEAF,
    Import,
    circles,
    floor_of,
    module_name,
    package_of,
    read_imports,
    upward,
    written_imports,
)

PACKAGE = Path(__file__).resolve().parents[1] / "premath"
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"
ASGI_STACK = ("starlette", "uvicorn", "anyio", "sse_starlette", "h11", "httpx")
"""The HTTP server stack loads only in the faces that serve HTTP (start-up budget)."""

SOURCES = sorted(PACKAGE.rglob("*.py"))
MODULES, IMPORTS = read_imports(PACKAGE)
BY_SOURCE: dict[str, list[Import]] = defaultdict(list)
for _one in IMPORTS:
    BY_SOURCE[_one.source].append(_one)


def _where(one: Import) -> str:
    return f"{one.path.relative_to(PACKAGE.parent)}:{one.line}"


def test_every_package_has_a_floor():
    """A new package (a sub-product, a face) must say where it sits before it can import."""
    packages = {path.parent.name for path in PACKAGE.glob("*/__init__.py")}
    assert sorted(packages - set(FLOORS)) == []


def test_the_architecture_shows_the_floors_as_they_are():
    """docs/architecture.md's "Layers" table names each floor's packages (`cli/`) in its
    `floor` column: the same table as the one enforced here."""
    shown: dict[str, int] = {}
    for row in re.finditer(r"^\| ([1-9]\d*) \|[^|]*\| ([^|]*) \|", ARCHITECTURE.read_text(), re.M):
        for name in re.findall(r"`([a-z_]+)/?`", row[2]):
            shown[name] = int(row[1])
    assert shown == {name: floor for name, floor in FLOORS.items() if floor != LEAF}


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_imports_flow_one_way(path):
    module = module_name(path, PACKAGE)
    up = [
        f"{_where(one)} imports {one.target} (floor {floor_of(one.target)}, above its own "
        f"{floor_of(module)})"
        for one in upward(BY_SOURCE[module])
    ]
    assert up == []
    for node, _ in written_imports(ast.parse(path.read_text(encoding="utf-8"))):
        names = (
            [alias.name for alias in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
        )
        where = f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
        for top in {name.split(".")[0] for name in names}:
            if top == "click":
                assert module.startswith("premath.cli"), f"{where} imports click"
            if top == "subprocess":
                assert module == "premath.runner.process", f"{where} imports subprocess"
            if top in ("mcp", "mcp_types"):
                assert module.startswith("premath.mcp."), f"{where} imports the MCP SDK"
            if top in ASGI_STACK:
                assert module.startswith(("premath.mcp.", "premath.web.")), (
                    f"{where} imports the ASGI stack ({top}): only premath/web and premath/mcp may"
                )


def test_no_modules_import_each_other_around_a_loop():
    """Not at load time, not lazily, not for types: a deferred or type-only import only hides a
    circle (issue 32: harness/authority.py and loop_config.py were one)."""
    found = {
        " <-> ".join(component): [
            f"{_where(one)} ({one.kind}) imports {one.target}"
            for one in IMPORTS
            if one.source in component and one.target in component
        ]
        for component in circles(MODULES, IMPORTS)
    }
    assert found == {}


def test_no_packages_import_each_other_around_a_loop():
    """Packages on one floor may import each other one way only (issue 32: observe and
    harness did both ways)."""
    between = [
        Import(package_of(one.source), package_of(one.target), one.path, one.line, one.kind)
        for one in IMPORTS
    ]
    assert circles(sorted({package_of(module) for module in MODULES}), between) == []
