"""The fast path (cli/_fast.py): parses the hot commands exactly as click would, or hands over.

click stays the one definition of the options: the table is generated from it, and a stale
table fails here. What the fast path accepts, click accepts with the same values; everything
else (help, errors, unusual forms) is click's, byte for byte.
"""

import contextlib
import subprocess
import sys
from pathlib import Path

import click
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from premath.cli import _fast, cli
from premath.cli._fast_spec import HOT_COMMANDS, SPEC_PATH, build_spec, spec_bytes
from tests.support.cli import run_premath

TABLE = build_spec()["commands"]


def test_the_table_is_generated_from_the_click_declarations():
    assert SPEC_PATH.read_bytes() == spec_bytes(), "stale: run `mise run cli-fast-path`"


def test_every_hot_command_takes_the_fast_path():
    assert build_spec()["clickOnly"] == {}
    assert sorted(TABLE) == sorted(" ".join(path) for path in HOT_COMMANDS)


def _click_command(key: str) -> click.Command:
    command: click.Command | None = cli
    for name in key.split(" "):
        assert isinstance(command, click.Group)
        command = command.get_command(click.Context(cli), name)
    assert command is not None
    return command


def _tokens(key: str) -> st.SearchStrategy[str]:
    opts = [opt for param in TABLE[key]["params"] for opt in param["opts"]]
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


@pytest.mark.parametrize("key", sorted(TABLE))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_what_the_fast_path_takes_click_takes_with_the_same_values(key, data, tmp_path_factory):
    args = data.draw(st.lists(_tokens(key), max_size=8))
    with contextlib.chdir(tmp_path_factory.getbasetemp()):  # no .premath: defaults as declared
        try:
            fast = _fast.parse(TABLE[key], args)
        except _fast._NotSure:
            return
        assert _click_params(key, args) == fast


@pytest.mark.parametrize(
    ("key", "args"),
    [
        ("harness-session read", ["--json"]),
        ("harness-session read", ["--session-path=x.json", "--json"]),
        ("harness-trajectory query", ["--mode", "failed", "--limit", "+3"]),
        ("harness-session write", ["--witness-ref", "a", "--witness-ref", "b"]),
        ("issue update", ["bd-1", "--priority", "-0"]),
        ("issue show", ["", "--json"]),
        ("issue claim-next", ["--assignee", "w", "--lease-ttl-seconds", "60"]),
    ],
)
def test_common_forms_take_the_fast_path(key, args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _fast.parse(TABLE[key], args) == _click_params(key, args)


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
        _fast.parse(TABLE["harness-trajectory query"], args)


def _both_paths(args: list[str], cwd: Path) -> tuple[object, object]:
    def outcome(env: dict[str, str]) -> object:
        done = run_premath(*args, cwd=cwd, env=env)
        return done.returncode, done.stdout, done.stderr

    return outcome({}), outcome({"PREMATH_CLI_FAST_PATH": "0"})


@pytest.mark.parametrize(
    "args",
    [
        ["issue", "ready", "--json"],
        ["issue", "ready"],
        ["issue", "list", "--status", "open"],
        ["issue", "show", "bd-1", "--json"],
        ["issue", "show", "bd-9", "--json"],
        ["issue", "show", "--json"],
        ["issue", "ready", "--help"],
        ["issue", "ready", "--json", "--json"],
        ["issue", "update", "bd-1", "--notes", "a", "--notes-file", "b", "--json"],
        ["issue", "update", "bd-1", "--priority", "x", "--json"],
        ["issue", "claim-next", "--json"],
        ["harness-session", "read", "--json"],
        ["harness-session", "read"],
        ["harness-session", "bootstrap", "--json"],
        ["harness-trajectory", "query", "--mode", "nope"],
        ["harness-trajectory", "query", "--json"],
        ["harness-join-check", "--input", "missing.json", "--json"],
        ["harness-join-check"],
    ],
    ids=" ".join,
)
def test_both_paths_print_the_same_bytes(args, tmp_path):
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


PROBE = """
import sys
from premath.cli._fast import run_fast
code = run_fast(sys.argv[1:])
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
