"""A repository where host programs can mutate: the instruction policies, accepted instruction
witnesses written by the real pipeline (`premath instruction-run`), and programs citing them."""

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from premath.harness.host.context import HostContext
from premath.harness.host.contract import BUILTIN_CONTRACT_PATH
from premath.harness.host.evaluate import EvalOptions, evaluate_program
from premath.harness.host.extension import BUILTIN_EXTENSION_PATH
from premath.harness.host.program import Bindings
from premath.harness.instruction.pipeline import run_instruction
from tests.harness.join_check_inputs import baseline
from tests.instruction.envelopes import POLICY_CI, envelope

REPO = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 3, 1, 10, 0, 0, tzinfo=UTC)
CHANGE = "capabilities.change_morphisms"
ALL_CLAIMS = [CHANGE, f"{CHANGE}.all"]


def claim(action: str) -> str:
    return f"{CHANGE}.{action.replace('.', '_')}"


def host_repo(root: Path) -> Path:
    """Policies and a closed join-check input: what an accepted instruction needs."""
    shutil.copytree(REPO / "policies" / "instruction", root / "policies" / "instruction")
    (root / "instructions").mkdir(exist_ok=True)
    (root / "join").mkdir(exist_ok=True)
    (root / "join" / "closed.json").write_text(json.dumps(baseline()))
    return root


def write_envelope(
    root: Path, name: str, claims: list[str], *, join: bool = True, check: str = "ci-wiring-check"
) -> str:
    """An instruction envelope not yet run; its ref (`instructions/<name>.json`)."""
    fields: dict[str, Any] = {"capabilityClaims": claims, "requestedChecks": [check]}
    if join:
        fields["joinCheckInput"] = "join/closed.json"
    ref = f"instructions/{name}.json"
    (root / ref).write_text(json.dumps(envelope(**fields), indent=2))
    return ref


def accepted_instruction(
    root: Path, name: str, claims: list[str], *, join: bool = True, accepted: bool = True
) -> str:
    """Run an instruction through the pipeline; its ref (`instructions/<name>.json`)."""
    ref = write_envelope(root, name, claims, join=join)
    command = "true {check}" if accepted else "false {check}"
    run_instruction(str(root / ref), str(root), now=lambda: NOW, check_command=command)
    return ref


def program(root: Path, *calls: dict[str, Any], name: str = "prog.json", **fields: Any) -> str:
    (root / name).write_text(json.dumps({**fields, "calls": list(calls)}))
    return name


def evidence(ref: str, *claims: str, policy: str = POLICY_CI) -> dict[str, Any]:
    """Program-level mutation evidence citing the instruction `ref`."""
    return {"policyDigest": policy, "instructionRef": ref, "capabilityClaims": [CHANGE, *claims]}


def evaluate(root: Path, name: str = "prog.json", **options: Any) -> dict[str, Any]:
    """The program run in-process with the shipped contract and extension, in `root`."""
    bindings = options.pop("bindings", Bindings())
    context = HostContext(repo_root=str(root), trajectory_path=str(root / "traj.jsonl"))
    settings = EvalOptions(
        program_path=str(root / name),
        contract_path=str(BUILTIN_CONTRACT_PATH),
        extension_path=str(BUILTIN_EXTENSION_PATH),
        bindings=bindings,
        context=options.pop("context", context),
        **options,
    )
    return evaluate_program(settings, now=lambda: NOW, lock_timeout=2.0)


def rows(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
