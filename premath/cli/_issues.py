"""What the `issue` and `dep` groups share: the `--issues` option and their text layout."""

from __future__ import annotations

from premath.cli._options import project_path_option
from premath.cli._text import lines_text as lines_text
from premath.models.vocabulary import DEFAULT_ISSUES_PATH

issues_option = project_path_option(
    "--issues",
    "--issues-path",
    "issues",
    default=DEFAULT_ISSUES_PATH,
    help_text="Issues JSONL path",
)
