"""No hot command loads a module it cannot afford: checked on the source, then once for real.

Agents call the hot commands hundreds of times; typing (with re and enum) alone costs a fifth of
a call's budget. The check walks each hot command's import closure with ast
(`tests/support/import_closure.py`): what `python -m premath` loads, the fast path, the
command's body and the imports its body runs. A failure names the import line that pulls the
module in. One real run of every hot command then confirms `sys.modules`, since a library
function's own lazy imports are not in the walk. premath/lean.py's stand-ins are held to the
modules they replace.
"""

from __future__ import annotations

import ast
import datetime
import os
import signal
import site
import subprocess
import sys
import typing

import orjson
import pytest

from premath import lean
from tests.harness.join_check_inputs import baseline
from tests.support.cli import run_premath
from tests.support.import_closure import (
    PACKAGE,
    ImportLine,
    chain,
    closure,
    function_imports,
    imports_of,
)
from tests.support.stores import write_open_store

BANNED = (
    "typing", "re", "enum", "json", "signal", "threading", "pathlib", "datetime",
    "click", "orjson", "pydantic", "yaml",
)  # fmt: skip
"""Together about 10 ms of a 20 ms call (docs/architecture.md "The CLI fast path"); click and
orjson load only when the fast path hands over or the input is large; `datetime`'s classes
come from `_datetime` (premath/lean.py)."""

HOT_COMMANDS = [
    ["harness-session", "read", "--json"],
    ["harness-session", "write", "--state", "active", "--issue-id", "bd-7", "--json"],
    ["harness-session", "bootstrap", "--json"],
    ["harness-trajectory", "append", "--step-id", "w1.bd-7.1", "--action", "run.check",
     "--result-class", "completed", "--json"],
    ["harness-trajectory", "query", "--json"],
    ["harness-join-check", "--input", "turn.json", "--json"],
    ["issue", "ready", "--json"],
    ["issue", "list", "--json"],
    ["issue", "show", "bd-7", "--json"],
    ["issue", "claim-next", "--assignee", "w1", "--json"],
    ["issue", "update", "bd-9", "--notes", "bench", "--json"],
]  # fmt: skip


def _command_path(argv: list[str]) -> tuple[str, ...]:
    return tuple(argv[:1]) if argv[0] == "harness-join-check" else tuple(argv[:2])


def _body(path: tuple[str, ...]) -> tuple[str, ast.FunctionDef]:
    """The module and definition of a hot command's body (`issue claim-next`: `issue_claim_next`
    in `premath/cli/hot/`)."""
    name = "_".join(path).replace("-", "_")
    for source in sorted((PACKAGE / "cli" / "hot").glob("*.py")):
        for node in ast.parse(source.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                return f"premath.cli.hot.{source.stem}", node
    raise LookupError(f"no body {name} for `premath {' '.join(path)}` in premath/cli/hot/")


def test_every_hot_body_is_walked_and_run():
    """Each body in premath/cli/hot/ (a function returning a `Reply`) has a command here."""
    bodies = {
        node.name
        for source in (PACKAGE / "cli" / "hot").glob("*.py")
        for node in ast.parse(source.read_text(encoding="utf-8")).body
        if isinstance(node, ast.FunctionDef)
        and isinstance(node.returns, ast.Name | ast.Constant)
        and getattr(node.returns, "id", getattr(node.returns, "value", None)) == "Reply"
    }
    probed = {_body(_command_path(argv))[1].name for argv in HOT_COMMANDS}
    assert bodies == probed


def _fast_path_functions() -> list[str]:
    source = (PACKAGE / "cli" / "_fast.py").read_text(encoding="utf-8")
    return [node.name for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)]


def _roots(path: tuple[str, ...]) -> list[ImportLine]:
    """What a hot command runs before and in its body: the entry point, the fast path (its
    functions' lazy imports too), the body's module and the imports the body and its helpers in
    that module run."""
    module, body = _body(path)
    roots = [ImportLine("python -m premath", 0, "premath.__main__")]
    roots += function_imports("premath.cli", "main")
    for function in _fast_path_functions():
        roots += function_imports("premath.cli._fast", function)
    roots.append(ImportLine("the fast path (importlib)", 0, module))
    roots += imports_of(module, body.body)
    helpers = {
        node.func.id
        for node in ast.walk(body)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    for helper in sorted(helpers):
        try:
            roots += function_imports(module, helper)
        except LookupError:
            continue  # imported from elsewhere or a builtin: its module is in the walk
    return roots


@pytest.mark.parametrize("argv", HOT_COMMANDS, ids=lambda argv: " ".join(_command_path(argv)))
def test_no_hot_command_imports_a_banned_module(argv):
    reached = closure(_roots(_command_path(argv)))
    offending = {name: chain(reached, name) for name in BANNED if name in reached}
    assert offending == {}, "\n".join(
        f"{name}: " + " -> ".join(steps) for name, steps in offending.items()
    )


def test_the_walk_follows_module_level_imports_only():
    """It finds `re` behind `dataclasses` (the standard library is walked too), and skips what
    runs under TYPE_CHECKING or inside a function."""
    reached = closure([ImportLine("test", 0, "dataclasses")])
    assert {"re", "inspect"} <= set(reached)
    assert chain(reached, "re")[0].endswith("imports dataclasses")
    lean_reached = closure([ImportLine("test", 0, "premath.lean")])
    assert "typing" not in lean_reached  # imported under TYPE_CHECKING only
    assert "signal" not in lean_reached
    assert "threading" not in lean_reached  # looked up in sys.modules, never imported
    assert "premath.runner.interrupts" in closure(function_imports("premath.cli._fast", "_run"))


def _lease_pair(base):
    """The same named tuple declared on `base` (typing's or the stand-in)."""

    class Lease(base):
        """A lease, as a test sees it."""

        owner: str
        ttl: int = 60
        tags: tuple[str, ...] = ()

        def renewed(self, ttl: int) -> Lease:
            return self._replace(ttl=ttl)

        @property
        def long(self) -> bool:
            return self.ttl > 100

    return Lease


def test_the_named_tuple_stand_in_is_typings():
    ours, theirs = _lease_pair(lean.NamedTuple), _lease_pair(typing.NamedTuple)
    for kind in (ours, theirs):
        lease = kind("w1")
        assert isinstance(lease, tuple)
        assert tuple(lease) == ("w1", 60, ())
        assert lease.renewed(200).long
        assert not lease.long
        assert lease == kind("w1", 60)
        assert lease != kind("w2")
    assert ours._fields == theirs._fields
    assert ours._field_defaults == theirs._field_defaults
    assert ours.__doc__ == theirs.__doc__
    assert ours.__module__ == theirs.__module__
    assert ours.__qualname__.endswith("Lease")
    assert repr(ours("w1")) == repr(theirs("w1"))
    assert list(ours.__annotations__) == list(theirs.__annotations__)


def test_the_datetime_stand_ins_are_datetimes():
    assert (lean.datetime, lean.timedelta, lean.UTC) == (
        datetime.datetime,
        datetime.timedelta,
        datetime.UTC,
    )
    assert lean.datetime is datetime.datetime


def test_the_signal_stand_ins_are_signals():
    for name in ("SIGINT", "SIGTERM", "SIGKILL", "SIGALRM", "SIG_DFL", "SIG_IGN", "ITIMER_REAL"):
        assert getattr(lean, name) == getattr(signal, name)
    assert lean.getsignal(signal.SIGTERM) == signal.getsignal(signal.SIGTERM)
    assert lean.in_main_thread()


PROBE = f"""
import sys
banned = set({BANNED!r})
loaded = lambda: sorted({{name.split(".")[0] for name in sys.modules}} & banned)
print("start", loaded(), file=sys.stderr)
from premath.cli import COMMAND_GROUPS
from premath.cli._fast import run_fast
for argv in {HOT_COMMANDS!r}:
    code = run_fast(argv, COMMAND_GROUPS)
    print(code, " ".join(argv[:2]), loaded(), file=sys.stderr)
"""


def test_every_hot_command_runs_without_the_banned_modules(tmp_path):
    """One interpreter runs every hot command in turn on a small project (50 open issues, a
    session, a join-check turn) and lists what each left in `sys.modules`. It starts without
    `site` (`-S`), so no editable install's finder loads anything first; the packages' folders
    come through PYTHONPATH."""
    write_open_store(tmp_path, 50)
    (tmp_path / "turn.json").write_bytes(orjson.dumps(baseline()))
    run_premath("harness-session", "write", "--state", "active", cwd=tmp_path)
    folders = [str(PACKAGE.parent), *site.getsitepackages()]
    done = subprocess.run(
        [sys.executable, "-S", "-c", PROBE],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(folders)},
        capture_output=True,
        check=False,
        text=True,
    )
    reports = [line for line in done.stderr.splitlines() if line.startswith(("start", "0 ", "1 "))]
    expected = ["start []", *(f"0 {' '.join(argv[:2])} []" for argv in HOT_COMMANDS)]
    assert reports == expected, done.stderr[-3000:]
