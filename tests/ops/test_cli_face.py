"""A catalogued operation's command is built from the operation (cli/_operations.py): its
parameters, kinds, choices and requiredness from the operation's parameters, help texts and
metavars from its `CliFace`, `hot` from the operation. A field added to the operation is an
option of its command with nothing else to write at the command line."""

import click
import pytest

from premath.cli import cli
from premath.cli._declaration import CHOICE, INT, ISSUES, JSON, PRIORITY, STR
from premath.cli._operations import cli_command, cli_params
from premath.models.params import param, snake_case
from premath.ops.catalogue import DEP_REPLACE, ISSUE_UPDATE, OPERATIONS
from premath.ops.issue_writes import UPDATE_FIELDS
from tests.support.cli import hot_commands, invoke

CLI_OPERATIONS = [operation for operation in OPERATIONS if operation.faces.cli is not None]
BUILT = [operation for operation in CLI_OPERATIONS if operation.faces.cli.help]
"""The operations whose command is built from the catalogue (the others' are still written at
the CLI: `issue add`, `issue discover`)."""


def _click_command(path: tuple[str, ...]) -> click.Command:
    command: click.Command | None = cli
    for name in path:
        assert isinstance(command, click.Group)
        command = command.get_command(click.Context(cli), name)
    assert command is not None
    return command


def _spelled(params) -> list[tuple[str | None, tuple[str, ...]]]:
    return [(p.name, tuple(p.opts) if p.opts and p.opts[0].startswith("-") else ()) for p in params]


def _with_estimate(operation):
    """`operation` with one more field, as a maintainer would add it: a parameter and its flag."""
    face = operation.faces.cli
    options = {**face.options, "estimate": "--estimate"}
    return operation._replace(
        params=(*operation.params, param("estimate", "u32")),
        faces=operation.faces._replace(cli=face._replace(options=options)),
    )


@pytest.mark.parametrize("operation", BUILT, ids=lambda o: o.action)
def test_the_click_command_is_the_operations(operation):
    face = operation.faces.cli
    built = _click_command(face.path)
    assert _spelled(built.params) == _spelled(cli_params(operation))
    assert built.help == face.help
    usage = invoke(*face.path, "--help")
    assert usage.exit_code == 0
    for name, settings in face.presented.items():
        if "help" in settings:
            assert " ".join(settings["help"].split()[:3]) in " ".join(usage.stdout.split())
        if "metavar" in settings:
            assert settings["metavar"] in usage.stdout, name


def test_issue_updates_hot_declaration_is_the_operations():
    declared = hot_commands()["issue update"]
    built = cli_params(ISSUE_UPDATE)
    assert [(p.name, p.opts, p.kind) for p in declared.params] == [
        (p.name, p.opts, p.kind) for p in built
    ]
    assert declared.hot is ISSUE_UPDATE.hot is True
    assert declared.params[-2:] == (ISSUES, JSON)
    kinds = {p.name: p.kind for p in declared.params}
    assert kinds["priority"] == PRIORITY  # the face's presentation wins over i32's range
    assert kinds["notes_file"] == STR  # the command line's own option


def test_a_new_field_is_an_option_of_the_command():
    operation = _with_estimate(ISSUE_UPDATE)
    (estimate,) = [p for p in cli_params(operation) if p.name == "estimate"]
    assert (estimate.opts, estimate.kind, estimate.low, estimate.high) == (
        ("--estimate",),
        INT,
        0,
        2**32 - 1,
    )
    assert [p.name for p in cli_params(operation)][-2:] == ["estimate", "json_output"]


def test_issue_updates_options_follow_its_fields():
    names = [p.name for p in cli_params(ISSUE_UPDATE)]
    fields = [snake_case(name) for name in UPDATE_FIELDS]
    assert names == ["id", *fields[:3], "notes_file", *fields[3:], "issues", "json_output"]


def test_hot_is_the_operations_flag():
    def body(app, /, **given):  # a body of the test's: the face's help becomes its docstring
        raise AssertionError("not run")

    assert cli_command(ISSUE_UPDATE._replace(hot=False), body).hot is False
    assert cli_command(ISSUE_UPDATE, body).hot is True
    assert body.__doc__ == ISSUE_UPDATE.faces.cli.help


def test_choices_and_requiredness_come_from_the_parameters():
    by_name = {p.name: p for p in cli_params(DEP_REPLACE)}
    assert by_name["to_dep_type"].kind == CHOICE
    assert by_name["to_dep_type"].required
    assert by_name["from_dep_type"].default == "blocks"
    assert not by_name["from_dep_type"].required
    assert by_name["issue_id"].metavar == "ISSUE"


def test_a_body_documents_nothing_of_its_own():
    def body(app, /, **given):
        """A second help text."""

    with pytest.raises(ValueError, match="its help is the face's"):
        cli_command(ISSUE_UPDATE, body)


def test_a_parameter_the_command_line_cannot_spell_is_refused():
    face = ISSUE_UPDATE.faces.cli
    operation = ISSUE_UPDATE._replace(
        params=(*ISSUE_UPDATE.params, param("labels", "strings")),
        faces=ISSUE_UPDATE.faces._replace(
            cli=face._replace(options={**face.options, "labels": "--labels"})
        ),
    )
    with pytest.raises(ValueError, match="labels: a strings parameter has no command-line kind"):
        cli_params(operation)
