"""Which modules a hot command loads, read from the source: the module-level import closure.

A module's top-level statements run when it is imported; a function's imports run only when it
is called, and `if TYPE_CHECKING:` blocks never run. The walk follows the first kind from a
hot command's entry modules, over premath's source and the standard library's Python modules
(ast only, nothing of premath imported; both branches of an `if` are taken, so it may find more
than a run loads, never less), and keeps for every module it reaches the import line that first
brought it in, so a failure names that line. Other packages (click, orjson) are leaves.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from functools import cache
from pathlib import Path
from typing import NamedTuple

PACKAGE = Path(__file__).resolve().parents[2] / "premath"


class ImportLine(NamedTuple):
    """`importer` imports `module` at `line` of its source (module-level)."""

    importer: str
    line: int
    module: str


@cache
def module_path(module: str) -> Path | None:
    """The source of a premath or standard-library Python module (a package's
    `__init__.py`); None for a C module, another package's, or a name that is no module."""
    parts = module.split(".")
    if parts[0] == "premath":
        base = PACKAGE.joinpath(*parts[1:])
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
        return None
    if parts[0] not in sys.stdlib_module_names:
        return None
    if len(parts) > 1 and not is_package(".".join(parts[:-1])):
        return None
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    # A frozen module (os, io, abc, ...) keeps its source's name in its loader state.
    origin = getattr(spec.loader_state, "filename", None) or spec.origin or ""
    return Path(origin) if origin.endswith(".py") else None


def is_package(module: str) -> bool:
    path = module_path(module)
    return path is not None and path.name == "__init__.py"


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _run_time_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of a module body that run on import, `if`/`try` blocks opened up
    (both branches of an `if`, except the type checker's), functions and classes' methods
    left closed."""
    statements: list[ast.stmt] = []
    for statement in body:
        statements.append(statement)
        if isinstance(statement, ast.If):
            if not _is_type_checking(statement.test):
                statements.extend(_run_time_statements(statement.body))
            statements.extend(_run_time_statements(statement.orelse))
        elif isinstance(statement, ast.Try):
            for block in (statement.body, statement.orelse, statement.finalbody):
                statements.extend(_run_time_statements(block))
            for handler in statement.handlers:
                statements.extend(_run_time_statements(handler.body))
        elif isinstance(statement, ast.ClassDef):
            statements.extend(
                _run_time_statements(
                    [s for s in statement.body if not isinstance(s, ast.FunctionDef)]
                )
            )
        elif isinstance(statement, ast.With):
            statements.extend(_run_time_statements(statement.body))
    return statements


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _resolved(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    base = package.split(".")
    base = base[: len(base) - node.level + 1]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(module: str, body: list[ast.stmt] | None = None) -> list[ImportLine]:
    """The modules `module` imports when it is imported (or when `body` runs), in order.

    `from package import name` imports `package.name` too when that is a premath module.
    """
    path = module_path(module)
    if path is None:
        return []
    if body is None:
        body = ast.parse(path.read_text(encoding="utf-8")).body
    package = _package_of(module, path)
    found: list[ImportLine] = []
    for statement in _run_time_statements(body):
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                found.append(ImportLine(module, statement.lineno, alias.name))
        elif isinstance(statement, ast.ImportFrom):
            target = _resolved(statement, package)
            found.append(ImportLine(module, statement.lineno, target))
            for alias in statement.names:
                if module_path(f"{target}.{alias.name}") is not None:
                    found.append(ImportLine(module, statement.lineno, f"{target}.{alias.name}"))
    return found


def _parents(module: str) -> list[str]:
    """Importing `a.b.c` runs `a` and `a.b` first."""
    parts = module.split(".")
    return [".".join(parts[:end]) for end in range(1, len(parts))]


def closure(roots: list[ImportLine]) -> dict[str, ImportLine]:
    """Every module the roots load at import time, each with the line that first loaded it."""
    reached: dict[str, ImportLine] = {}
    pending = list(roots)
    deferred = 0
    while pending:
        line = pending.pop(0)
        if module_path(line.importer) and line.importer not in reached and deferred <= len(pending):
            pending.append(line)  # a function's import: first reach the module it sits in
            deferred += 1
            continue
        deferred = 0
        for module in [*_parents(line.module), line.module]:
            if module in reached:
                continue
            reached[module] = line
            pending.extend(imports_of(module))
    return reached


def chain(reached: dict[str, ImportLine], module: str) -> list[str]:
    """How a module was reached: `importer:line` from the root down."""
    steps: list[str] = []
    seen: set[str] = set()
    while module in reached and module not in seen:
        seen.add(module)
        line = reached[module]
        path = module_path(line.importer)
        where = (
            path.relative_to(PACKAGE.parent)
            if path and line.importer.startswith("premath")
            else path or line.importer
        )
        steps.append(
            f"{where}:{line.line} imports {line.module}"
            if line.line
            else f"{where} imports {line.module}"
        )
        module = line.importer
    return steps[::-1]


def function_imports(module: str, function: str) -> list[ImportLine]:
    """The imports a module's top-level function runs when it is called (its lazy ones)."""
    path = module_path(module)
    assert path is not None, module
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef) and node.name == function:
            return imports_of(module, node.body)
    raise LookupError(f"{module} has no function {function}")
