"""The package's import rules (DEVELOPERS.md "Layout"), checked on the source itself.

cli -> harness/runner/issues -> store -> models -> leaf modules; click only in cli/, subprocess
only in runner/process.py, the ASGI stack only in web/ and mcp/, and no module imports a layer
above its own.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "premath"
LAYER = {
    "__main__": 5,
    "cli": 4,
    "mcp": 4,
    "web": 4,
    "harness": 3,
    "runner": 3,
    "bench": 3,
    "atif": 3,
    "issues": 3,
    "transport": 3,
    "observe": 3,
    "ops": 3,
    "store": 2,
    "models": 1,
}
LEAF = 0
ASGI_STACK = ("starlette", "uvicorn", "anyio", "sse_starlette", "h11", "httpx")
"""The HTTP server stack loads only in the faces that serve HTTP (start-up budget)."""


def _layer(module: str) -> int:
    parts = module.split(".")
    return LAYER.get(parts[1], LEAF) if len(parts) > 1 else LEAF


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


SOURCES = sorted(PACKAGE.rglob("*.py"))


def test_every_package_has_a_layer():
    """A new package (a sub-product, a face) must say where it sits before it can import."""
    packages = {path.parent.name for path in PACKAGE.glob("*/__init__.py")}
    assert sorted(packages - set(LAYER)) == []


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_imports_flow_one_way(path):
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    own = _layer(module)
    for name in _imports(path):
        if name.startswith("premath."):
            assert _layer(name) <= own, f"{module} imports {name} from a higher layer"
        top = name.split(".")[0]
        if top == "click":
            assert module.startswith("premath.cli"), f"{module} imports click"
        if top == "subprocess":
            assert module == "premath.runner.process", f"{module} imports subprocess"
        if top in ("mcp", "mcp_types"):
            assert module.startswith("premath.mcp."), f"{module} imports the MCP SDK"
        if top in ASGI_STACK:
            assert module.startswith(("premath.mcp.", "premath.web.")), (
                f"{module} imports the ASGI stack ({top}): only premath/web and premath/mcp may"
            )


def _runtime_imports(path: Path, modules: set[str]) -> set[str]:
    """premath modules `path` imports when it runs, lazily too (not under TYPE_CHECKING)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and getattr(child.test, "id", None) == "TYPE_CHECKING":
                continue
            if isinstance(child, ast.Import):
                found.update(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                found.add(child.module)
                found.update(f"{child.module}.{alias.name}" for alias in child.names)
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found & modules


def test_no_modules_import_each_other_around_a_loop():
    """Not even lazily: executor selection sits above the executors (issue 23), so no module
    needs a late import to break a cycle."""
    names = {}
    for path in SOURCES:
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {name: _runtime_imports(path, set(names)) - {name} for name, path in names.items()}
    loops = []
    for start in graph:
        seen, frontier = set(), list(graph[start])
        while frontier:
            current = frontier.pop()
            if current == start:
                loops.append(start)
                break
            if current not in seen:
                seen.add(current)
                frontier.extend(graph[current])
    assert loops == []
