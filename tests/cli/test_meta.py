"""Every command documents itself, speaks JSON, and hot commands stay off heavy imports."""

import ast
import re
import shlex
import subprocess
import sys
from pathlib import Path

import click
import orjson
import pytest

from premath import errors
from premath.cli import COMMAND_GROUPS, cli
from tests.support.cli import heavy_imports_of, invoke


def _leaf_commands() -> list[tuple[str, ...]]:
    ctx = click.Context(cli)
    leaves: list[tuple[str, ...]] = []
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        if isinstance(command, click.Group):
            leaves.extend((name, sub) for sub in command.list_commands(ctx))
        else:
            leaves.append((name,))
    return leaves


LEAVES = _leaf_commands()


def test_every_group_is_registered_lazily():
    assert set(COMMAND_GROUPS) <= set(cli.list_commands(click.Context(cli)))


@pytest.mark.parametrize("path", LEAVES, ids=" ".join)
def test_every_command_has_help_and_a_json_flag(path):
    out = invoke(*path, "--help")
    assert out.exit_code == 0, out.stderr
    assert "--json" in out.stdout
    assert out.stdout.count("\n") > 3


# Commands agents call in tight loops: their import path must stay lean (start-up budget).
HOT_COMMANDS = [
    ("harness-session", "read", "--json"),
    ("harness-session", "bootstrap", "--json"),
    ("harness-feature", "next", "--json"),
    ("harness-trajectory", "query", "--json"),
    ("harness-trajectory", "append", "--step-id", "s", "--action", "a", "--result-class", "ok"),
    ("harness-join-check", "--input", "missing.json", "--json"),
    ("issue", "ready", "--json"),
    ("issue", "claim-next", "--assignee", "w1", "--json"),
    ("observe", "--mode", "needs_attention", "--json"),
    ("observe-build", "--json"),
]


@pytest.mark.parametrize("argv", HOT_COMMANDS, ids=" ".join)
def test_hot_commands_do_not_import_heavy_modules(tmp_path, argv):
    _, modules = heavy_imports_of(argv, tmp_path)
    assert modules == []


def _command(path: tuple[str, ...]) -> click.Command:
    ctx = click.Context(cli)
    command: click.Command | None = cli
    for name in path:
        assert isinstance(command, click.Group)
        command = command.get_command(ctx, name)
    assert command is not None
    return command


@pytest.mark.parametrize("path", LEAVES, ids=" ".join)
def test_every_option_has_help_and_the_command_an_example_that_parses(path):
    command = _command(path)
    undocumented = [
        param.opts[0]
        for param in command.params
        if isinstance(param, click.Option) and not param.hidden and not param.help
    ]
    assert undocumented == []
    prefix = "premath " + " ".join(path)
    help_text = (command.help or "").replace("\\\n", " ")  # join continued lines
    examples = [line.strip() for line in help_text.splitlines() if line.strip().startswith(prefix)]
    assert len(examples) >= 1, f"no `{prefix} ...` example in the help"
    example = examples[0].split(" > ")[0].replace("$'", "'")
    args = shlex.split(example)[1 + len(path) :]
    command.make_context(prefix, args, resilient_parsing=False).close()


# Divergence D16-8: one concept, both groups' spellings (the reference's shown first).
ALIASES = [
    (("issue", "ready"), "--issues", "--issues-path"),
    (("dep", "diagnostics"), "--issues", "--issues-path"),
    (("harness-loop", "worker"), "--issues-path", "--issues"),
    (("harness-loop", "worker"), "--command-timeout-seconds", "--timeout"),
    (("harness-loop", "worker"), "--output-cap-bytes", "--output-cap"),
    (("harness-session", "read"), "--path", "--session-path"),
    (("harness-feature", "read"), "--path", "--feature-ledger-path"),
    (("harness-trajectory", "query"), "--path", "--trajectory-path"),
    (("harness-kpi",), "--trajectory-path", "--path"),
    (("harness-kpi",), "--issues-path", "--issues"),
]


@pytest.mark.parametrize(("path", "first", "alias"), ALIASES, ids=lambda v: str(v))
def test_both_spellings_name_one_option_the_reference_s_first(path, first, alias):
    options = [p for p in _command(path).params if isinstance(p, click.Option)]
    (option,) = [p for p in options if alias in p.opts]
    assert option.opts[:2] == [first, alias]


def _error_codes() -> tuple[str, ...]:
    """`ErrorCode`'s values, read from its source: errors.py spells the `Literal` for the type
    checker only (a hot command imports no typing)."""
    tree = ast.parse(Path(errors.__file__).read_text(encoding="utf-8"))
    (alias,) = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and [getattr(target, "id", None) for target in node.targets] == ["ErrorCode"]
    ]
    assert isinstance(alias.value, ast.Subscript)
    return ast.literal_eval(alias.value.slice)


ERROR_CODES = _error_codes()
TESTS = Path(__file__).resolve().parents[1]
SPEC = TESTS.parent / "specs" / "cli-conventions.md"


def _asserted_codes() -> set[str]:
    """Quoted names on test lines that read an error code (this file spells none but its own)."""
    found = set()
    for path in TESTS.rglob("*.py"):
        for line in path.read_text(encoding="utf-8").splitlines():
            if "code" in line:
                found.update(re.findall(r"\"([a-z_]+)\"", line))
    return found


def test_every_error_code_is_printed_by_some_test():
    assert sorted(set(ERROR_CODES) - _asserted_codes()) == []


def test_the_cli_conventions_list_every_error_code():
    text = SPEC.read_text(encoding="utf-8")
    assert [code for code in ERROR_CODES if f"`{code}`" not in text] == []


def test_an_unexpected_exception_is_an_internal_error(tmp_path, monkeypatch):
    def fail(*_args, **_kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("premath.issues.memory.ready", fail)
    out = invoke("issue", "ready", "--issues", str(tmp_path / "issues.jsonl"), "--json")
    message = "internal error: RuntimeError: boom (set PREMATH_DEBUG=1 for a traceback)"
    assert (out.exit_code, out.json) == (
        1,
        {"error": {"code": "internal_error", "message": message}},
    )
    assert out.stderr == f"error: {message}\n"


@pytest.mark.parametrize("name", sorted(COMMAND_GROUPS))
def test_each_stored_group_help_is_the_groups_own(name):
    command = cli.get_command(click.Context(cli), name)
    assert command is not None
    stored = click.Command(name, help=COMMAND_GROUPS[name].short_help).get_short_help_str(10_000)
    assert stored == command.get_short_help_str(10_000)


def test_the_top_level_help_loads_no_command_group(tmp_path):
    probe = (
        "import sys\n"
        "from premath.cli import cli\n"
        "try:\n"
        "    cli.main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('premath.cli.')), file=sys.stderr)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert re.search(r"\n  issue +Issue memory: add, list, claim", proc.stdout)
    group_modules = {lazy.target.partition(":")[0] for lazy in COMMAND_GROUPS.values()}
    loaded = orjson.loads(proc.stderr.strip().replace("'", '"'))
    assert "premath.cli._root" in loaded
    assert sorted(group_modules & set(loaded)) == []
