"""Help a person reads: whole at 80 columns (no cut descriptions, no line wider than the
screen), one default per option, and the user's words (no internal code names or ids)."""

import re

import click
import pytest

from premath.cli import cli
from tests.support.cli import every_command, invoke
from tests.support.terminal import PREMATH, run_in_pty, screen_lines

COMMANDS = [path for path, _ in every_command()]
JARGON = [
    re.compile(r"\bTusk\b"),  # the reference's internal code name
    re.compile(r"\bD\d+-\d+\b"),  # divergence ids: docs/divergences.md, not help
    re.compile(r"\bB\d+\b"),  # the reference's bug numbers
    re.compile(r"ToolUse|JoinClosed closure|normali[sz]ed evidence"),
]


@pytest.fixture(autouse=True)
def eighty_columns(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "premath")
def test_help_fits_80_columns_and_cuts_no_description(path):
    result = invoke(*path, "--help")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line for line in lines if len(line) > 80] == []
    listed = [line for line in lines if not line.startswith("Usage:")]  # `[ARGS]...` is syntax
    assert [line for line in listed if line.rstrip().endswith("...")] == []


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "premath")
def test_help_speaks_the_user_s_language(path):
    text = invoke(*path, "--help").stdout
    assert [pattern.pattern for pattern in JARGON if pattern.search(text)] == []


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "premath")
def test_each_option_shows_one_default(path):
    command = dict(every_command())[path]
    doubled = [
        param.opts[0]
        for param in command.params
        if isinstance(param, click.Option)
        and param.show_default
        and "[default:" in (param.help or "")
    ]
    assert doubled == []


def test_top_level_help_in_a_real_80_column_terminal(tmp_path):
    code, seen = run_in_pty([*PREMATH, "--help"], columns=80, cwd=tmp_path)
    assert code == 0
    lines = screen_lines(seen)
    commands = lines[lines.index("Commands:") + 1 :]
    assert len([line for line in commands if line.strip()]) == len(
        cli.list_commands(click.Context(cli))
    )
    assert max(map(len, lines)) <= 80
    assert not any(line.rstrip().endswith("...") for line in commands)


def test_priority_is_asked_for_in_words():
    help_text = invoke("issue", "add", "--help").stdout
    assert "2147483647" not in help_text
    assert "Priority: a whole number, lower is more urgent" in help_text
    refused = invoke("issue", "add", "T", "--priority", "high", "--json")
    assert refused.exit_code == 2
    assert (
        "'high' is not a priority: give a whole number, lower is more urgent"
        in (refused.json["error"]["message"])
    )
    assert "integer range" not in invoke("experiment", "run", "x", "--concurrency", "four").stderr
