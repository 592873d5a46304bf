"""A command's declaration (cli/_declaration.py): names as click derives them, kinds checked."""

import click
import pytest

from premath.cli._declaration import CHOICE, FLAG, INT, CliParam, command, option
from premath.cli._options import click_command


@pytest.mark.parametrize(
    "decls",
    [("--lease-id",), ("-x", "--long-name"), ("--a", "--bb"), ("-q",), ("--Mixed-Case",)],
)
def test_an_option_is_named_as_click_names_it(decls):
    assert option(*decls).name == click.Option(list(decls)).name


def test_a_given_name_wins():
    assert option("--input", "input_path").name == "input_path"


@pytest.mark.parametrize(
    ("settings", "error"),
    [
        ({"kind": "float"}, "unknown parameter kind 'float'"),
        ({"kind": CHOICE}, "choices go with the choice kind"),
        ({"kind": INT, "choices": ("a",)}, "choices go with the choice kind"),
    ],
)
def test_a_kind_is_one_the_fast_path_knows(settings, error):
    with pytest.raises(ValueError, match=error):
        CliParam("x", ("--x",), **settings)


def _takes_anything(**given: object) -> None:
    """A body for the test."""


@pytest.mark.parametrize(
    "param",
    [
        option("--tag", multiple=True),
        option("--tags", multiple=True, default=("a", "b")),
        option("--loud", kind=FLAG),
        option("--limit", kind=INT, default=20),
        option("--mode", kind=CHOICE, choices=("a", "b"), default="b"),
        option("--name"),
    ],
    ids=lambda param: param.name,
)
def test_an_absent_parameter_gets_what_click_gives(param):
    built = click_command(command("t", param)(_takes_anything))
    assert built.make_context("t", []).params == {param.name: param.absent()}
