"""The README's tour and tools/readme-tour.sh (which CI runs) list the same commands in order."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_TRAILING_COMMENT = re.compile(r"\s{2,}#.*$")
# Sections the empty-folder tour leaves out, with why: each needs what an empty folder lacks.
OTHER_SECTIONS = (
    "### In containers (Docker)",  # a Docker engine: tests/docker cover it
    "### Instructions and the host API",  # this repository's instructions/ and mise tasks: CI
)


def readme_tour_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    tour = readme.split("## A tour of the commands", 1)[1].split("## Development", 1)[0]
    for section in OTHER_SECTIONS:
        tour = re.sub(rf"{re.escape(section)}.*?(?=\n### |\Z)", "", tour, flags=re.DOTALL)
    blocks = re.findall(r"```sh\n(.*?)```", tour, re.DOTALL)
    lines = [line for block in blocks for line in block.splitlines()]
    return [_TRAILING_COMMENT.sub("", line) for line in lines if line.strip()]


def script_commands() -> list[str]:
    script = (ROOT / "tools" / "readme-tour.sh").read_text(encoding="utf-8")
    body = script.split("set -x", 1)[1].splitlines()[1:]
    return [line for line in body if line.strip() and not line.startswith("#")]


def test_the_tour_script_runs_exactly_the_readme_tour():
    assert script_commands() == readme_tour_commands()


def test_the_readme_opens_with_its_two_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = readme.split("\n\n", 1)[1]
    assert first_block.startswith(
        "```sh\npython3 -m venv .venv && . .venv/bin/activate && pip install . && premath demo\n```"
    )
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    second = (
        "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[test]' "
        "&& python -m pytest"
    )
    assert f"```sh\n{second}\n```" in readme
    assert ci.count(second) == 2  # once here, once in a copy without ../shared
    assert "tools/readme-tour.sh" in ci
