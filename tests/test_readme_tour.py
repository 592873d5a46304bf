"""The README's tour and tools/readme-tour.sh (which CI runs) list the same commands in order;
the tour runs in an 80-column terminal without a line wider than that (but the JSON it asks
for), and ends with its KPI and its trajectory agreeing on what failed."""

import os
import re
import sys
from pathlib import Path

import orjson

from tests.support.cli import run_premath
from tests.support.terminal import run_in_pty, screen_lines

ROOT = Path(__file__).resolve().parents[1]
_TRAILING_COMMENT = re.compile(r"\s{2,}#.*$")
# Sections the empty-folder tour leaves out, with why: each needs what an empty folder lacks.
OTHER_SECTIONS = (
    "### In containers (Docker)",  # a Docker engine: tests/docker cover it
    "### Instructions and the host API",  # this repository's instructions/ and mise tasks: CI
    "### Agent tool surface: MCP and transport",  # a server that runs until stopped: tests/mcp
    "### Scaling out (Ray)",  # a Ray cluster: tests/ray start one
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
    body = script.split("# === the README's tour ===\n", 1)[1].split("# === end of the tour", 1)[0]
    return [line for line in body.splitlines() if line.strip() and not line.startswith("#")]


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


def _outputs(lines: list[str]) -> list[tuple[str, str]]:
    """(command, line) for each line the tour printed, its command as the tour showed it."""
    command, outputs = "", []
    for line in lines:
        if line.startswith("+ tour: "):
            command = line.removeprefix("+ tour: ")
        elif line.startswith("+       "):
            command += " " + line.removeprefix("+       ")
        else:
            outputs.append((command, line))
    return outputs


def test_the_tour_fits_80_columns_and_its_kpi_and_trajectory_agree(tmp_path):
    scripts = Path(sys.executable).parent
    assert (scripts / "premath").is_file(), "the README's install puts `premath` beside python"
    folder = tmp_path / "tour"
    code, seen = run_in_pty(
        ["bash", os.fspath(ROOT / "tools" / "readme-tour.sh"), os.fspath(folder)],
        columns=80,
        cwd=tmp_path,
        env={"PATH": f"{scripts}{os.pathsep}{os.environ['PATH']}"},
        timeout_s=600,
    )
    lines = screen_lines(seen)
    assert code == 0, "\n".join(lines[-40:])
    asked_in_full = ("--json", "premath schema")  # JSON documents, printed whole
    wide = [
        f"{command[:40]}: {line}"
        for command, line in _outputs(lines)
        if len(line.rstrip()) > 80 and not any(flag in command for flag in asked_in_full)
    ]
    assert wide == []
    assert [line for line in lines if line.strip()][-1] == "tour: failed steps: KPI 0, trajectory 0"
    kpi = orjson.loads(run_premath("harness-kpi", "--json", cwd=folder).stdout)
    failed = orjson.loads(
        run_premath("harness-trajectory", "query", "--mode", "failed", "--json", cwd=folder).stdout
    )
    assert kpi["counts"]["failedRows"] == failed["failedCount"] == 0
    assert (kpi["ratios"]["gatePassRate"], kpi["decision"]["state"]) == (1.0, "pass")
