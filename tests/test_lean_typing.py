"""The hot commands' lean imports: typing's stand-ins behave as typing's names do, and no hot
command imports what they replace (typing, re, json, enum, signal, threading, pathlib)."""

import subprocess
import sys
import typing

import orjson
import pytest

from premath import lean
from premath.cli import _fast_spec
from tests.harness.join_check_inputs import baseline
from tests.support.cli import run_premath
from tests.support.stores import write_open_store


def _pair(base):
    """The same named tuple declared on `base` (typing's or the stand-in)."""

    class Lease(base):
        """A lease, as a test sees it."""

        owner: str
        ttl: int = 60
        tags: tuple[str, ...] = ()

        def renewed(self, ttl: int) -> "Lease":
            return self._replace(ttl=ttl)

        @property
        def long(self) -> bool:
            return self.ttl > 100

    return Lease


def test_a_named_tuple_is_typings():
    ours, theirs = _pair(lean.NamedTuple), _pair(typing.NamedTuple)
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


HEAVY = ("typing", "re", "json", "enum", "signal", "threading", "pathlib", "click", "orjson")
PROBE = f"""
import sys
heavy = {HEAVY!r}
for name in [name for name in sys.modules if name.split(".")[0] in heavy]:
    del sys.modules[name]  # loaded by the interpreter's start (an editable install's finder)
from premath.cli._fast import run_fast
code = run_fast(sys.argv[1:])
print(code, sorted(name for name in sys.modules if name.split(".")[0] in heavy), file=sys.stderr)
"""
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


def test_every_hot_command_is_probed():
    probed = {tuple(argv[: len(path)]) for argv in HOT_COMMANDS for path in _fast_spec.HOT_COMMANDS}
    assert set(_fast_spec.HOT_COMMANDS) <= probed


@pytest.fixture(scope="module")
def small_project(tmp_path_factory):
    """50 open issues, a session, a trajectory row, a join-check turn."""
    project = tmp_path_factory.mktemp("project")
    write_open_store(project, 50)
    (project / "turn.json").write_bytes(orjson.dumps(baseline()))
    run_premath("harness-session", "write", "--state", "active", cwd=project)
    run_premath(
        "harness-trajectory", "append", "--step-id", "w1.bd-1.1", "--action", "run.check",
        "--result-class", "completed", cwd=project,
    )  # fmt: skip
    return project


@pytest.mark.parametrize("argv", HOT_COMMANDS, ids=" ".join)
def test_hot_commands_import_none_of_the_heavy_modules(argv, small_project):
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], cwd=small_project, capture_output=True, check=False
    )
    assert done.stderr.decode().splitlines()[-1] == "0 []", done.stderr.decode()[-2000:]
