"""The fast path (cli/_fast.py): parses the hot commands exactly as click would, or hands over.

Each hot command is declared once (`cli/_declaration.py`); click's command is built from the
same declaration. What the fast path accepts, click accepts with the same values and prints
the same bytes for; everything else (help, errors, unusual forms) is click's, byte for byte.
"""

import contextlib
import inspect
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import click
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from premath.cli import COMMAND_GROUPS, _fast, cli
from premath.cli._declaration import FLAG, INT, JSON, CliCommand, command, option
from premath.cli._options import click_command
from premath.cli._reply import AppContext, Reply
from premath.clock import FrozenClock
from tests.harness.join_check_inputs import baseline
from tests.support.cli import hot_commands, run_premath
from tests.support.stores import write_open_store

HOT = hot_commands()
NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def _click_command(key: str) -> click.Command:
    command: click.Command | None = cli
    for name in key.split(" "):
        assert isinstance(command, click.Group)
        command = command.get_command(click.Context(cli), name)
    assert command is not None
    return command


@pytest.mark.parametrize("key", sorted(HOT))
def test_the_click_command_is_built_from_the_declaration(key):
    declared, built = HOT[key], _click_command(key)
    options = [(p.name, tuple(p.opts) if isinstance(p, click.Option) else ()) for p in built.params]
    assert options == [(param.name, param.opts) for param in declared.params]
    assert built.help == declared.body.__doc__


@pytest.mark.parametrize("key", sorted(HOT))
def test_the_body_takes_what_the_declaration_passes(key):
    declared = HOT[key]
    signature = list(inspect.signature(declared.body).parameters.values())[declared.app :]
    named = [p.name for p in signature if p.kind is not p.VAR_KEYWORD]
    passed = [param.name for param in declared.params if param.expose]
    if any(p.kind is p.VAR_KEYWORD for p in signature):
        assert set(named) < set(passed)
    else:
        assert sorted(named) == sorted(passed)


def _tokens(key: str) -> st.SearchStrategy[str]:
    opts = [opt for param in HOT[key].params for opt in param.opts]
    values = ["a", "", "bd-1", "-1", "0", "5", "+5", "007", "1_0", " 5", "٣", "9999999999",
              "18446744073709551616", "latest", "LATEST", "active", "x=y", "-"]  # fmt: skip
    extras = ["--help", "-h", "--", "-x", "--nope", "--json=1"]
    joined = [f"{opt}={value}" for opt in opts for value in ("v", "", "3", "latest")]
    return st.sampled_from(opts + values + extras + joined)


def _click_params(key: str, args: list[str]) -> dict[str, object] | None:
    command = _click_command(key)
    try:
        ctx = command.make_context(f"premath {key}", list(args))
    except (click.ClickException, click.exceptions.Exit):
        return None
    exposed = {param.name for param in command.params if param.expose_value}
    return {name: value for name, value in ctx.params.items() if name in exposed}


@pytest.mark.parametrize("key", sorted(HOT))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_what_the_fast_path_takes_click_takes_with_the_same_values(key, data, tmp_path_factory):
    args = data.draw(st.lists(_tokens(key), max_size=8))
    with contextlib.chdir(tmp_path_factory.getbasetemp()):  # no .premath: defaults as declared
        try:
            fast = _fast.parse(HOT[key], args)
        except _fast._NotSure:
            return
        assert _click_params(key, args) == fast


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["--json", "-h"],
        ["--json", "--json"],
        ["--mode", "LATEST"],
        ["--limit", "1_000"],
        ["--limit", "-1"],
        ["--nope"],
        ["--", "x"],
        ["--path"],
        ["--path", "--help"],
        ["stray"],
    ],
)
def test_unusual_forms_go_to_click(args):
    with pytest.raises(_fast._NotSure):
        _fast.parse(HOT["harness-trajectory query"], args)


APPEND = ["--step-id", "w1.bd-1.2", "--action", "run.check", "--result-class", "completed"]
SAME_BYTES: list[tuple[str, list[str]]] = [
    ("harness-session read", ["--json"]),
    ("harness-session read", ["--session-path=.premath/harness_session.json"]),
    ("harness-session write", ["--state", "active", "--issue-id", "bd-7", "--json"]),
    ("harness-session write", ["--summary", "s", "--witness-ref", "a", "--witness-ref", "b"]),
    ("harness-session bootstrap", ["--json"]),
    ("harness-session bootstrap", ["--feature-ledger", "ledger.json"]),
    ("harness-trajectory append", [*APPEND, "--json"]),
    ("harness-trajectory append", [*APPEND, "--instruction-ref", "i", "--issue-id", "bd-1"]),
    ("harness-trajectory query", ["--mode", "failed", "--limit", "+3", "--json"]),
    ("harness-trajectory query", ["--limit=0"]),
    ("harness-join-check", ["--input", "turn.json", "--json"]),
    ("harness-join-check", ["--input", "missing.json", "--json"]),
    ("issue ready", ["--json"]),
    ("issue ready", []),
    ("issue list", ["--status", "open", "--json"]),
    ("issue list", ["--assignee", "nobody"]),
    ("issue show", ["bd-2", "--json"]),
    ("issue show", ["bd-9"]),
    ("issue claim-next", ["--assignee", "w1", "--json"]),
    ("issue claim-next", ["--assignee=w1", "--lease-ttl-seconds", "60", "--include-escalations"]),
    ("issue update", ["bd-1", "--status", "closed", "--priority", "-0", "--json"]),
    ("issue update", ["bd-2", "--title", "T", "--notes", "n", "--issues", ".premath/issues.jsonl"]),
]  # fmt: skip
"""At least one row per hot command: arguments the fast path takes, run through both paths."""


def test_every_hot_command_has_rows():
    assert sorted({key for key, _ in SAME_BYTES}) == sorted(HOT)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """5 open issues, a session, a trajectory row, a join-check turn."""
    folder = tmp_path_factory.mktemp("project")
    write_open_store(folder, 5)
    (folder / "turn.json").write_bytes(orjson.dumps(baseline()))
    run_premath("harness-session", "write", "--state", "active", cwd=folder)
    run_premath("harness-trajectory", "append", *APPEND, cwd=folder)
    return folder


def _app() -> AppContext:
    return AppContext(clock=FrozenClock(NOW), lock_timeout_s=5)


def _outcome(argv, fast, project, tmp_path, capsysbinary, monkeypatch):
    """Exit code, stdout, stderr and the files of a fresh copy of `project` after `argv`."""
    folder = tmp_path / ("fast" if fast else "click")
    shutil.copytree(project, folder)
    monkeypatch.chdir(folder)
    capsysbinary.readouterr()
    if fast:
        with monkeypatch.context() as patched:
            patched.setattr(_fast, "AppContext", _app)
            code = _fast.run_fast(argv, COMMAND_GROUPS)
        assert code is not None, "the fast path handed these arguments to click"
    else:
        with pytest.raises(SystemExit) as exit_:
            cli.main(argv, obj=_app())
        code = exit_.value.code
    out, err = capsysbinary.readouterr()
    files = {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    return code, out, err, files


@pytest.mark.parametrize(
    ("key", "args"), SAME_BYTES, ids=[" ".join([key, *args]) for key, args in SAME_BYTES]
)
def test_a_hot_command_and_its_click_command_give_the_same_bytes(
    key, args, project, tmp_path, capsysbinary, monkeypatch
):
    argv = [*key.split(" "), *args]
    fast = _outcome(argv, True, project, tmp_path, capsysbinary, monkeypatch)
    slow = _outcome(argv, False, project, tmp_path, capsysbinary, monkeypatch)
    assert fast == slow
    assert b"internal error" not in fast[2]


def _both_paths(args: list[str], cwd: Path) -> tuple[object, object]:
    def outcome(env: dict[str, str]) -> object:
        done = run_premath(*args, cwd=cwd, env=env)
        return done.returncode, done.stdout, done.stderr

    return outcome({}), outcome({"PREMATH_CLI_FAST_PATH": "0"})


@pytest.mark.parametrize(
    "args",
    [
        ["issue", "ready", "--json"],
        ["issue", "show", "--json"],
        ["issue", "ready", "--help"],
        ["issue", "ready", "--json", "--json"],
        ["issue", "update", "bd-1", "--notes", "a", "--notes-file", "b", "--json"],
        ["issue", "update", "bd-1", "--priority", "x", "--json"],
        ["issue", "claim-next", "--json"],
        ["harness-session", "read"],
        ["harness-trajectory", "query", "--mode", "nope"],
        ["harness-join-check"],
    ],
    ids=" ".join,
)
def test_both_paths_print_the_same_bytes_as_real_processes(args, tmp_path):
    (tmp_path / ".premath").mkdir()
    issue = (
        b'{"id":"bd-1","title":"One","status":"open","priority":2,"issue_type":"task",'
        b'"created_at":"2026-02-22T00:00:00Z","updated_at":"2026-02-22T00:00:00Z"}\n'
    )
    (tmp_path / ".premath" / "issues.jsonl").write_bytes(issue)
    run_premath("harness-session", "write", "--state", "active", cwd=tmp_path)
    fast, slow = _both_paths(args, tmp_path)
    assert fast == slow


def test_a_subfolder_resolves_default_paths_to_the_project_root(tmp_path):
    (tmp_path / ".premath").mkdir()
    (tmp_path / "sub").mkdir()
    run_premath("harness-session", "write", "--state", "active", cwd=tmp_path)
    fast, slow = _both_paths(["harness-session", "read", "--json"], tmp_path / "sub")
    assert fast == slow
    assert b'"path": "../.premath/harness_session.json"' in fast[1]  # type: ignore[index]


def _echo(count: int, loud: bool) -> Reply:
    """Echo."""
    return Reply({"count": count, "loud": loud})


@pytest.mark.parametrize("hot", [True, False])
def test_hot_is_the_one_flag_that_puts_a_command_on_the_fast_path(hot, monkeypatch, capsys):
    count = option("--count", kind=INT, low=0, high=9, default=1)
    declared = command("demo echo", count, option("--loud", kind=FLAG), JSON, hot=hot)(_echo)
    assert isinstance(declared, CliCommand)
    monkeypatch.setattr(_fast, "declared_command", lambda argv, groups: declared)
    assert _fast.run_fast(["demo", "echo", "--count", "3", "--json"], {}) == (0 if hot else None)
    assert capsys.readouterr().out == ('{\n  "count": 3,\n  "loud": false\n}\n' if hot else "")
    built = click_command(declared)
    assert built.make_context("echo", ["--count", "3"]).params == {"count": 3, "loud": False}


PROBE = """
import sys
from premath.cli import COMMAND_GROUPS
from premath.cli._fast import run_fast
code = run_fast(sys.argv[1:], COMMAND_GROUPS)
print(code, "click" in sys.modules, file=sys.stderr)
"""


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["issue", "ready", "--json"], "0 False"),
        (["harness-session", "read", "--json"], "1 False"),
        (["issue", "ready", "--help"], "None False"),
        (["issue", "blocked", "--json"], "None False"),
        (["issue", "update", "bd-1", "--notes", "a", "--notes-file", "b"], "None True"),
    ],
)
def test_the_fast_path_loads_no_click(args, expected, tmp_path):
    (tmp_path / ".premath").mkdir()
    (tmp_path / ".premath" / "issues.jsonl").write_bytes(b"")
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=tmp_path, capture_output=True, check=False
    )
    assert done.stderr.decode().splitlines()[-1] == expected
