"""Every operation of the catalogue is reachable from every face it names, with the same checks:
one bad input gets one refusal class at each face (an MCP tool error, the host action's
`scheme_eval.invalid_program`, the transport's `lease_invalid_payload`, the CLI's usage error),
in the same words where the wire shares them, and nothing is written. Table-driven over
premath/ops/catalogue.py: a new operation is covered by declaring it."""

import importlib
import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from premath.clock import FrozenClock
from premath.harness.host.extension_actions import ARG_SPECS, EXTENSION_ACTIONS
from premath.harness.host.program import Bindings
from premath.mcp.catalogue import TOOLS_BY_NAME
from premath.mcp.server import call_tool
from premath.mcp.tools import ServerConfig, ToolService
from premath.models.params import ENUM_VALUES, Param, Reading, check_arguments
from premath.ops import catalogue
from premath.ops.catalogue import OPERATIONS
from premath.ops.operation import Operation
from premath.transport.dispatch import _LEASE_PAYLOADS, dispatch
from premath.transport.payloads import LEASE_STRUCTS
from premath.transport.registry import ROUTES_BY_ACTION
from tests.harness.loop_support import make_issues
from tests.instruction.host_support import (
    ALL_CLAIMS,
    CHANGE,
    NOW,
    accepted_instruction,
    evaluate,
    evidence,
    host_repo,
    program,
)
from tests.support.cli import invoke

INVALID = "scheme_eval.invalid_program"
_INTEGERS = ("u32", "i32", "i64", "u64")


@dataclass(frozen=True)
class BadInput:
    label: str
    args: dict[str, Any]
    param: Param
    kind: str
    """`type`, `missing` or `choice`: what is wrong with `param`."""


def _valid(spec: Param) -> Any:
    if spec.choices:
        return spec.choices[0]
    if spec.kind in ENUM_VALUES:
        return ENUM_VALUES[spec.kind][0]
    samples = {"bool": True, "strings": [], "object": {}, "objects": []}
    return 1 if spec.kind in _INTEGERS else samples.get(spec.kind, "bd-1")


def _wrong(spec: Param) -> Any:
    return "x" if spec.kind in (*_INTEGERS, "bool", "strings", "object", "objects") else 7


def bad_inputs(operation: Operation) -> list[BadInput]:
    """A wrong type for each parameter, each required one left out, each choice missed."""
    base = {p.name: _valid(p) for p in operation.params if p.required}
    found = []
    for spec in operation.params:
        found.append(BadInput(f"{spec.name}:type", {**base, spec.name: _wrong(spec)}, spec, "type"))
        if spec.required:
            left = {k: v for k, v in base.items() if k != spec.name}
            found.append(BadInput(f"{spec.name}:missing", left, spec, "missing"))
        if spec.choices:
            chosen = {**base, spec.name: "not-a-choice"}
            found.append(BadInput(f"{spec.name}:choice", chosen, spec, "choice"))
    return found


def _at(face: str, bad: BadInput, operation: Operation) -> bool:
    """Whether the face takes the input as given (a host action binds its issue itself)."""
    taken = {p.name: p for p in operation.params_at(face)}
    spec = taken.get(bad.param.name)
    return spec is not None and (bad.kind != "missing" or spec.required)


CASES = [
    pytest.param(operation, bad, id=f"{operation.action}-{bad.label}")
    for operation in OPERATIONS
    for bad in bad_inputs(operation)
]


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    host_repo(tmp_path)
    make_issues(tmp_path, ["bd-1", "bd-2"])
    return tmp_path


EVIDENCE = ("instruction-runs", "join-witnesses")
"""What the host's evidence check records of a call, refused or not (not the operation's)."""


def _tree(root: Path) -> dict[str, bytes]:
    folder = root / ".premath"
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.relative_to(folder).parts[0] not in EVIDENCE
    }


def _mcp(root: Path, operation: Operation, args: dict[str, Any]) -> str:
    config = ServerConfig(issues_path=str(root / ".premath" / "issues.jsonl"), repo_root=str(root))
    result = call_tool(ToolService(config, FrozenClock(NOW)), str(operation.faces.mcp), args)
    assert result.is_error, result.content
    return str(result.content[0].text)  # type: ignore[union-attr]


def _host(root: Path, operation: Operation, args: dict[str, Any]) -> tuple[str, str]:
    ref = accepted_instruction(root, "20260301T000000Z-faces", ALL_CLAIMS)
    call = {"action": operation.faces.host, "args": args}
    program(root, call, **evidence(ref, f"{CHANGE}.all"))
    document = evaluate(root, bindings=Bindings(issue_id="bd-1"))
    (effect,) = document["effects"]
    return effect["resultClass"], effect["payload"]["diagnostic"]


def _transport(operation: Operation, args: dict[str, Any]) -> str:
    envelope = dispatch(str(operation.faces.transport), args, now=NOW, timeout_s=1.0)
    assert (envelope["result"], envelope["failureClasses"]) == (
        "rejected",
        ["lease_invalid_payload"],
    ), envelope
    return re.sub(r"^invalid [a-z-]+ payload: ", "", envelope["diagnostic"])


def _argv(operation: Operation, args: dict[str, Any]) -> list[str] | None:
    """The CLI spelling of `args`, None where the command line cannot say it (a JSON type)."""
    cli = operation.faces.cli
    assert cli is not None
    argv = list(cli.path)
    for name in cli.arguments:
        if name in args:
            argv.append(str(args[name]))
    for name, value in args.items():
        if name in cli.options:
            argv += [cli.options[name], str(value)]
        elif name not in cli.arguments:
            return None
    return argv


@pytest.mark.parametrize(("operation", "bad"), CASES)
def test_a_bad_input_is_refused_alike_at_every_face(repo, operation, bad):
    before = _tree(repo)
    said: dict[str, str] = {}
    if operation.faces.mcp is not None and _at("mcp", bad, operation):
        said["mcp"] = _mcp(repo, operation, bad.args)
        expected = {"type": "invalid type: ", "missing": "missing field `", "choice": "invalid "}
        assert said["mcp"].startswith(expected[bad.kind]), said["mcp"]
    if operation.faces.host is not None and _at("host", bad, operation):
        failure_class, diagnostic = _host(repo, operation, bad.args)
        assert failure_class == INVALID, diagnostic
        said["host"] = diagnostic.removeprefix(f"invalid {operation.faces.host} args: ")
    if operation.faces.transport is not None and _at("transport", bad, operation):
        said["transport"] = _transport(operation, bad.args)
    spelled = bad.kind != "type" or bad.param.kind in _INTEGERS  # the shell has no JSON types
    if operation.faces.cli is not None and spelled:
        argv = _argv(operation, bad.args)
        if argv is not None:
            outcome = invoke(*argv, "--json")
            assert outcome.exit_code == 2, (argv, outcome.stdout, outcome.stderr)
    assert said, "no face took the input: the case is not one any face can be asked"
    assert len(set(said.values())) == 1, said
    assert _tree(repo) == before


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda o: o.action)
def test_each_face_it_names_offers_it(operation):
    faces = operation.faces
    if faces.mcp is not None:
        tool = TOOLS_BY_NAME[faces.mcp]
        assert tool.fields == operation.params_at("mcp")
        assert tool.read_only == operation.read_only
    if faces.host is not None:
        assert faces.host in EXTENSION_ACTIONS
        assert ARG_SPECS[faces.host] == operation.params_at("host")
    if faces.cli is not None:
        help_text = invoke(*faces.cli.path, "--help")
        assert help_text.exit_code == 0, help_text.stderr
        for flag in faces.cli.options.values():
            assert re.search(rf"(^|[ ,]){flag}[ ,]", help_text.stdout, re.M), flag
    if faces.remote is not None:
        module, _, attribute = faces.remote.partition(":")
        owner, _, method = attribute.partition(".")
        loaded = importlib.import_module(module)
        called = getattr(getattr(loaded, owner), method)
        by_name = f'"{faces.mcp}"' in Path(str(loaded.__file__)).read_text(encoding="utf-8")
        constants = [name for name, value in vars(catalogue).items() if value is operation]
        assert by_name or any(f"ops.{name}" in inspect.getsource(called) for name in constants)
    if faces.transport is not None:
        assert ROUTES_BY_ACTION[faces.transport].action == operation.action
        kind = _LEASE_PAYLOADS[faces.transport][0]
        assert LEASE_STRUCTS[kind][1] == operation.params_at("transport")


def test_the_transport_reads_no_snake_case_alias():
    """The reference's transport structs have no aliases: `lease_id` is an unknown key there,
    ignored, while the MCP tool reads it as `leaseId` (the `Reading` of each face)."""
    payload = {"id": "bd-1", "assignee": "w", "lease_id": "lease-1"}
    envelope = dispatch("issue.lease_renew", payload, now=NOW, timeout_s=1.0)
    assert envelope["diagnostic"] == "invalid renew payload: missing field `leaseId`"
    params = catalogue.ISSUE_LEASE_RENEW.params_at("mcp")
    assert check_arguments(params, payload, Reading("struct issue_lease_renew"))["leaseId"] == (
        "lease-1"
    )
