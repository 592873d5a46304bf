"""The instruction pipeline: check the envelope, run its checks, write the witness.

What `mise run ci-pipeline-instruction -- <envelope>` does (the reference's
`tools/ci/run_instruction.py`): an envelope that fails validation gets a pre-execution reject
witness; a reject decision (unknown classification, rejected proposal discharge) gets a
rejected witness without running anything; otherwise each requested check runs as a command
(`mise run <check>` by default) in the repository root and any non-zero exit rejects. An
envelope that names a `joinCheckInput` (a path under the root) also gets the JoinClosed gate's
verdict as join-gate evidence (`joinClosed`, `joinFailureClasses`, `joinWitnessRef`). The
witness lands at `artifacts/ciwitness/<instructionId>.json` (atomic), with its MAC beside it
(`<instructionId>.json.mac`, D22-3), where the MCP mutation gate and `harness boot` read it.
Every path the witness names is relative to the root.
"""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from premath.harness.commands import command_env, missing_program, run_command
from premath.harness.instruction.envelope import (
    parse_envelope,
    read_envelope_bytes,
    validate_envelope,
)
from premath.harness.instruction.errors import InstructionError
from premath.harness.instruction.witness import (
    build_pre_execution_witness,
    build_witness,
    write_witness,
)
from premath.models.instruction_witness import InstructionWitness, witness_relative_path
from premath.store.witness_mac import new_run_id
from premath.timefmt import format_seconds_z

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DEFAULT_CHECK_COMMAND = "mise run {check}"
CHECK_TIMEOUT_S = 3600.0
CHECK_OUTPUT_CAP = 1 << 22
LOG_DIR = ".premath/instruction-runs"
JOIN_WITNESS_DIR = ".premath/join-witnesses"


@dataclass(frozen=True)
class PipelineResult:
    witness: InstructionWitness
    witness_path: str
    """Relative to the repository root."""
    invalid: InstructionError | None
    """Set when the envelope failed validation (a pre-execution reject)."""
    run_id: str
    """The run bound into the witness's MAC (D22-3)."""

    def to_document(self) -> dict[str, Any]:
        return {
            "action": "instruction.run",
            "instructionId": self.witness.instruction_id,
            "instructionRef": self.witness.instruction_ref,
            "witnessPath": self.witness_path,
            "verdictClass": self.witness.verdict_class,
            "failureClasses": self.witness.failure_classes,
            "executedChecks": self.witness.executed_checks,
        }


def _relative(root: Path, path: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


@dataclass(frozen=True)
class RunTerms:
    """How one pipeline run writes: its run id, whether an accepted witness already at its
    path is kept (the MCP tool, D22-4), the key file, and a monotonic deadline for its checks."""

    run_id: str = field(default_factory=new_run_id)
    keep_accepted: bool = False
    key_file: str | None = None
    deadline: float | None = None

    def check_timeout(self) -> float:
        if self.deadline is None:
            return CHECK_TIMEOUT_S
        return max(min(CHECK_TIMEOUT_S, self.deadline - time.monotonic()), 0.1)


def _run_check(
    root: Path, check: str, template: str, instruction_id: str, terms: RunTerms
) -> dict[str, Any]:
    command = template.replace("{check}", shlex.quote(check))
    env = command_env({}, [name for name in os.environ if name.startswith("MISE_")])
    run = run_command(
        check,
        command,
        cwd=str(root),
        env=env,
        timeout_s=terms.check_timeout(),
        output_cap=CHECK_OUTPUT_CAP,
        log_dir=str(root / LOG_DIR / instruction_id),
    )
    exit_code = run.outcome.exit_code
    return {
        "checkId": check,
        "status": "passed" if run.ok else "failed",
        "exitCode": exit_code if exit_code is not None else -1,
        "durationMs": int(run.outcome.duration_s * 1000),
    }


def run_instruction(
    instruction: str,
    repo_root: str,
    *,
    now: Callable[[], datetime],
    check_command: str = DEFAULT_CHECK_COMMAND,
    site_profile: str = "local",
    terms: RunTerms | None = None,
    report: Callable[[str], None] = lambda _line: None,
) -> PipelineResult:
    """Check, run and witness one instruction envelope; the witness is always written (unless
    `terms.keep_accepted` finds an accepted witness of another run there: RuleRefused). A check
    command whose program is not installed (mise, by default) is reported before it runs."""
    terms = terms or RunTerms()
    root = Path(repo_root)
    path = Path(instruction) if os.path.isabs(instruction) else root / instruction
    instruction_id = path.stem or path.name or "instruction-invalid"
    started, clock = now(), time.monotonic()
    runtime: dict[str, Any] = {
        "instructionId": instruction_id,
        "instructionRef": _relative(root, path),
        "squeakSiteProfile": site_profile,
        "runStartedAt": format_seconds_z(started),
    }
    raw: Any = None
    try:
        raw = parse_envelope(str(path), read_envelope_bytes(str(path)))
        checked = validate_envelope(raw, str(path), repo_root)
    except InstructionError as exc:
        from premath.harness.instruction.digests import stable_hash

        runtime["instructionDigest"] = "instr1_" + stable_hash(raw)
        witness = build_pre_execution_witness(
            raw, _finished(runtime, now, clock, []), exc.failure_class, exc.detail
        )
        _write(root, witness, terms)
        return PipelineResult(witness, witness_relative_path(instruction_id), exc, terms.run_id)
    runtime["instructionDigest"] = checked["instructionDigest"]
    results = []
    if checked["executionDecision"]["state"] == "execute":
        path_env = command_env({}, ()).get("PATH", "")
        program = missing_program(check_command.replace("{check}", "check"), path_env, str(root))
        if program is not None and checked["requestedChecks"]:
            report(
                f"warning: {program} is not installed: the checks will fail to start; install it "
                "or pass --check-command (e.g. --check-command 'sh -c {check}')"
            )
        results = [
            _run_check(root, check, check_command, instruction_id, terms)
            for check in checked["requestedChecks"]
        ]
    witness = build_witness(checked, _finished(runtime, now, clock, results))
    join_input = raw.get("joinCheckInput")
    if checked["executionDecision"]["state"] == "execute" and isinstance(join_input, str):
        witness = witness.model_copy(update=_join_evidence(root, join_input))
    _write(root, witness, terms)
    return PipelineResult(witness, witness_relative_path(instruction_id), None, terms.run_id)


def _write(root: Path, witness: InstructionWitness, terms: RunTerms) -> None:
    write_witness(
        root,
        witness,
        run_id=terms.run_id,
        keep_accepted=terms.keep_accepted,
        key_file=terms.key_file,
    )


def _join_evidence(root: Path, join_input: str) -> dict[str, Any]:
    """Run the JoinClosed gate on the envelope's join-check input; its verdict for the witness.

    The witness ref is the stored join witness, relative to the root; an input the gate cannot
    evaluate is recorded as not closed, with `harness_join_check_invalid`.
    """
    from premath.errors import InvalidUsage
    from premath.harness.join.check import run_join_check
    from premath.harness.join.witness import join_witness_path, write_join_witness

    try:
        result = run_join_check(str(root / join_input))
    except InvalidUsage:
        return {
            "join_closed": False,
            "join_failure_classes": ["harness_join_check_invalid"],
            "join_witness_ref": None,
        }
    relative = join_witness_path(result, JOIN_WITNESS_DIR)
    write_join_witness(str(root / relative), result)
    return {
        "join_closed": result["joinClosed"],
        "join_failure_classes": result["failureClasses"],
        "join_witness_ref": relative,
    }


def _finished(
    runtime: dict[str, Any], now: Callable[[], datetime], clock: float, results: list[Any]
) -> dict[str, Any]:
    return {
        **runtime,
        "runFinishedAt": format_seconds_z(now()),
        "runDurationMs": int((time.monotonic() - clock) * 1000),
        "results": results,
    }
