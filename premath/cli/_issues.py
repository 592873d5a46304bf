"""What the `issue` and `dep` groups share: the `--issues` option and their text layout."""

from __future__ import annotations

from premath.cli._declaration import ISSUES
from premath.cli._options import click_param
from premath.cli._text import lines_text as lines_text

issues_option = click_param(ISSUES)
