#!/usr/bin/env python3
"""Print premath/'s import graph as a reader checks it: its modules and the floor each sits on,
every import that runs back up to a higher floor, and every import circle (issue 32).

    python tools/import_graph.py [--package DIR] [--modules]

An import is one of three kinds: module-level (it runs when the module loads), deferred (inside a
function: it runs on the first call) or type-only (under `if TYPE_CHECKING:`, never at run time).
Circles are reported twice: among module-level imports, which Python must resolve while loading,
and among all three kinds, where a deferred or type-only import only hides the circle. The exit
status is 1 when an import runs back up or goes round. `FLOORS` is the one table of floors;
tests/test_layering.py enforces it and docs/architecture.md draws it.
"""

import argparse
import ast
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

PACKAGE = Path(__file__).resolve().parents[1] / "premath"

FLOORS: dict[str, int] = {
    "__main__": 8,
    "cli": 8,
    "mcp": 8,
    "web": 8,
    "harness": 7,
    "bench": 7,
    "ops": 6,
    "observe": 5,
    "transport": 5,
    "issues": 4,
    "record": 3,
    "runner": 3,
    "atif": 3,
    "store": 2,
    "models": 1,
}
"""Each top-level package's floor: a module imports only from its own floor and the floors below.
The faces (8) over the loop and benchmark runs (7; the host actions, a face of the loop, live in
harness/host/) over the operation catalogue (6, premath/ops/: each operation declared once, run
by every face) over the observation surface and transport (5), over issue memory
(4), over the loop's record, processes and runs, ATIF (3); then store (2), models (1) and the
modules outside every package (errors.py, clock.py, ...), the leaves (0)."""
LEAF = 0

ImportKind = Literal["module", "deferred", "type-only"]
KINDS: tuple[ImportKind, ...] = ("module", "deferred", "type-only")
WrittenImport = tuple[ast.Import | ast.ImportFrom, ImportKind]


@dataclass(frozen=True)
class Import:
    """One premath import written in one module."""

    source: str
    target: str
    path: Path
    line: int
    kind: ImportKind


def module_name(path: Path, package: Path = PACKAGE) -> str:
    """`premath.record.kpi` for premath/record/kpi.py; a package is named by its __init__."""
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def floor_of(module: str) -> int:
    parts = module.split(".")
    return FLOORS.get(parts[1], LEAF) if len(parts) > 1 else LEAF


def package_of(module: str) -> str:
    """The top-level package a module belongs to (`harness` for premath.harness.host.args);
    `leaf` for the modules outside every package."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in FLOORS) else "leaf"


def _is_type_checking(test: ast.expr) -> bool:
    name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
    return name == "TYPE_CHECKING"


def written_imports(tree: ast.AST) -> Iterator[WrittenImport]:
    """Every import statement with its kind: inside a function deferred, under
    `if TYPE_CHECKING:` type-only, else module-level (a class body runs while loading)."""

    def visit(
        node: ast.AST, kind: ImportKind
    ) -> Iterator[tuple[ast.Import | ast.ImportFrom, ImportKind]]:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, kind
            return
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for statement in node.body:
                yield from visit(statement, "type-only")
            for statement in node.orelse:
                yield from visit(statement, kind)
            return
        if (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            and kind == "module"
        ):
            kind = "deferred"
        for child in ast.iter_child_nodes(node):
            yield from visit(child, kind)

    return visit(tree, "module")


def read_imports(package: Path = PACKAGE) -> tuple[list[str], list[Import]]:
    """The package's modules and each premath import written in them, resolved to the module it
    loads: `from premath.x import y` names premath.x.y when that is a module, else premath.x."""
    paths = {module_name(path, package): path for path in sorted(package.rglob("*.py"))}
    root = package.name
    found: list[Import] = []
    for source, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node, kind in written_imports(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif node.level == 0 and node.module:
                targets = [
                    f"{node.module}.{alias.name}"
                    if f"{node.module}.{alias.name}" in paths
                    else node.module
                    for alias in node.names
                ]
            else:
                continue
            for target in dict.fromkeys(targets):
                if target == root or target.startswith(f"{root}."):
                    found.append(Import(source, target, path, node.lineno, kind))
    return list(paths), found


def upward(imports: list[Import]) -> list[Import]:
    """Imports whose target sits on a higher floor than the module that writes them."""
    return [one for one in imports if floor_of(one.target) > floor_of(one.source)]


def circles(modules: list[str], imports: list[Import]) -> list[list[str]]:
    """The graph's strongly connected components of two or more modules (Tarjan's), each sorted,
    largest first: every module in one can reach every other through imports."""
    graph: dict[str, set[str]] = {module: set() for module in modules}
    for one in imports:
        if one.target in graph and one.target != one.source:
            graph[one.source].add(one.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(start: str) -> None:
        # Iterative Tarjan: premath's chains are deeper than a comfortable recursion limit.
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))

    for module in modules:
        if module not in index:
            connect(module)
    return sorted(found, key=lambda component: (-len(component), component))


def _where(one: Import, package: Path) -> str:
    return f"{one.path.relative_to(package.parent)}:{one.line}"


def report(package: Path = PACKAGE, *, list_modules: bool = False) -> tuple[str, bool]:
    """The printed report and whether the graph is clean (nothing up, no circle)."""
    modules, imports = read_imports(package)
    by_kind = Counter(one.kind for one in imports)
    per_floor = Counter(floor_of(module) for module in modules)
    packages: dict[int, list[str]] = {}
    for name, floor in sorted(FLOORS.items()):
        packages.setdefault(floor, []).append(name)
    lines = [
        f"modules: {len(modules)}; premath imports: {len(imports)} "
        f"({by_kind['module']} module-level, {by_kind['deferred']} deferred, "
        f"{by_kind['type-only']} type-only)",
        "floors (highest first):",
    ]
    for floor in sorted(set(packages) | {LEAF}, reverse=True):
        names = ", ".join(packages.get(floor, [])) or "leaf modules"
        lines.append(f"  {floor}: {names} ({per_floor[floor]} modules)")
    if list_modules:
        lines.append("modules:")
        lines.extend(f"  {floor_of(module)} {module}" for module in modules)

    up = upward(imports)
    arrows = Counter(
        (one.source.split(".")[1], one.target.split(".")[1] if "." in one.target else "")
        for one in up
    )
    lines.append(f"imports back up to a higher floor: {len(up)}")
    for (source, target), count in sorted(arrows.items(), key=lambda item: (-item[1], item[0])):
        lines.append(f"  {source} -> {target}: {count}")
    lines.extend(f"    {_where(one, package)} ({one.kind}) imports {one.target}" for one in up)

    loaded = circles(modules, [one for one in imports if one.kind == "module"])
    hidden = [c for c in circles(modules, imports) if c not in loaded]
    lines.append(f"import circles among module-level imports: {len(loaded)}")
    lines.extend(f"  {' <-> '.join(component)}" for component in loaded)
    lines.append(f"import circles closed only by deferred or type-only imports: {len(hidden)}")
    for component in hidden:
        lines.append(f"  {' <-> '.join(component)}")
        members = set(component)
        lines.extend(
            f"    {_where(one, package)} ({one.kind}) imports {one.target}"
            for one in imports
            if one.source in members and one.target in members
        )
    lines.append("arrows between packages (imports of each kind, module/deferred/type-only):")
    arrows_between = Counter(
        (package_of(one.source), package_of(one.target), one.kind)
        for one in imports
        if package_of(one.source) != package_of(one.target)
    )
    for source, target in sorted({(s, t) for s, t, _ in arrows_between}):
        counts = "/".join(str(arrows_between[source, target, kind]) for kind in KINDS)
        lines.append(f"  {source} -> {target}: {counts}")
    rings = circles(
        sorted({package_of(module) for module in modules}),
        [
            Import(package_of(one.source), package_of(one.target), one.path, one.line, one.kind)
            for one in imports
        ],
    )
    lines.append(f"circles between packages: {len(rings)}")
    lines.extend(f"  {' <-> '.join(component)}" for component in rings)
    return "\n".join(lines) + "\n", not (up or loaded or hidden)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--package", type=Path, default=PACKAGE, help="the package folder")
    parser.add_argument("--modules", action="store_true", help="list every module and its floor")
    options = parser.parse_args(argv)
    text, clean = report(options.package.resolve(), list_modules=options.modules)
    sys.stdout.write(text)
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
