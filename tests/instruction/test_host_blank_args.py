"""Blank optional host-action args are absent (the reference's scheme-eval `non_empty`): for every
optional string argument of every in-process host action, a call giving it blank answers as the
call leaving it out (same class, same payload, `argsDigest` aside), run on twin repositories.
Verbatim texts (issue titles, descriptions, notes, assignees) are the exception, as in the MCP
tools: a blank there is a real edit."""

import shutil
from pathlib import Path

import orjson
import pytest

from premath.harness.host.context import HostContext
from premath.harness.host.extension_actions import ARG_SPECS
from premath.harness.host.local_actions import ARG_FIELDS
from premath.harness.host.program import Bindings
from premath.harness.host.replay import masked
from tests.harness.loop_support import make_issues
from tests.instruction.host_support import (
    ALL_CLAIMS,
    CHANGE,
    accepted_instruction,
    evaluate,
    evidence,
    host_repo,
    program,
)
from tests.support.observation import write_witnesses

BASE_ARGS = {  # the smallest args each action accepts in the twin repositories
    "observe.instruction": {"instructionId": "20260222T010000Z-ci-wiring"},
    "observe.projection": {"projectionDigest": "proj1_x"},
    "instruction.check": {"instructionPath": "instructions/20260301T000000Z-blank.json"},
    "issue.update": {"notes": "n"},
    "issue.discover": {"title": "Follow-up"},
    "dep.add": {"dependsOnId": "bd-2"},
    "dep.remove": {"dependsOnId": "bd-2"},
    "dep.replace": {"dependsOnId": "bd-2", "toDepType": "related"},
    "harness.feature.write": {"status": "in_progress"},
    "harness.trajectory.append": {"action": "a", "resultClass": "ok"},
}
CASES = [
    (action, arg.name)
    for specs in (ARG_FIELDS, ARG_SPECS)
    for action, spec in specs.items()
    for arg in spec
    if arg.kind == "string" and not (arg.required or arg.verbatim) and action != "instruction.run"
]


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    root = host_repo(tmp_path_factory.mktemp("template"))
    make_issues(root, ["bd-1", "bd-2"])
    write_witnesses(root)
    accepted_instruction(root, "20260301T000000Z-blank", ALL_CLAIMS)
    return root


def twin(template: Path, target: Path, call: dict, monkeypatch) -> dict:
    shutil.copytree(template, target)
    monkeypatch.chdir(target)
    ref = "instructions/20260301T000000Z-blank.json"
    program(target, call, **evidence(ref, f"{CHANGE}.all"))
    context = HostContext(trajectory_path="traj.jsonl")  # paths as given: twins compare equal
    document = evaluate(target, bindings=Bindings(issue_id="bd-1"), context=context)
    (effect,) = document["effects"]
    return effect


def test_every_optional_string_arg_is_covered():
    assert len(CASES) > 40
    assert ("issue.list", "status") in CASES
    assert ("dep.diagnostics", "graphScope") in CASES


@pytest.mark.parametrize(("action", "name"), CASES, ids=[f"{a}.{n}" for a, n in CASES])
@pytest.mark.parametrize("blank", ["  ", "", "\t\n"], ids=["spaces", "empty", "tab"])
def test_a_blank_optional_arg_is_the_arg_left_out(
    template, tmp_path, monkeypatch, action, name, blank
):
    base = BASE_ARGS.get(action, {})
    call = {"action": action, "args": base}
    absent = twin(template, tmp_path / "absent", call, monkeypatch)
    blanked = {"action": action, "args": {**base, name: blank}}
    given = twin(template, tmp_path / "blank", blanked, monkeypatch)
    assert given["resultClass"] == absent["resultClass"]
    assert masked(given["payload"]) == masked(absent["payload"])
    assert absent["argsDigest"] != given["argsDigest"]


def test_verbatim_texts_keep_a_blank(template, tmp_path, monkeypatch):
    call = {"action": "issue.update", "args": {"notes": "  ", "assignee": ""}}
    effect = twin(template, tmp_path / "repo", call, monkeypatch)
    assert effect["resultClass"] == "accepted"
    lines = (tmp_path / "repo" / ".premath" / "issues.jsonl").read_bytes().splitlines()
    stored = {row["id"]: row for row in map(orjson.loads, lines)}["bd-1"]
    assert stored["notes"] == "  "
