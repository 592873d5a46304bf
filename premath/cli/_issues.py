"""What the `issue` and `dep` groups share: the `--issues` option and their text layout."""

import click

from premath.cli._options import discovered_default
from premath.cli._text import lines_text as lines_text
from premath.models.vocabulary import DEFAULT_ISSUES_PATH

issues_option = click.option(
    "--issues",
    "--issues-path",
    "issues",
    default=DEFAULT_ISSUES_PATH,
    show_default=True,
    help="Issues JSONL path [default: under the nearest folder above holding .premath/]",
    callback=discovered_default,
)
