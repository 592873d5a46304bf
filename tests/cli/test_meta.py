"""Every command documents itself, speaks JSON, and hot commands stay off heavy imports."""

import click
import pytest

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
]


@pytest.mark.parametrize("argv", HOT_COMMANDS, ids=" ".join)
def test_hot_commands_do_not_import_heavy_modules(tmp_path, argv):
    _, modules = heavy_imports_of(argv, tmp_path)
    assert modules == []
