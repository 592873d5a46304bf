"""End to end: envelope -> `instruction-run` (the ci-pipeline-instruction task) -> witness -> a
gated MCP `issue_update` citing it through a real `premath mcp-serve` and the MCP SDK client.

Skips, naming what is missing, where the MCP server (premath.mcp) or the SDK is not installed.
"""

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import orjson
import pytest

from tests.harness.join_check_inputs import baseline
from tests.harness.loop_support import make_issues
from tests.instruction.envelopes import envelope
from tests.mcp.client import server_env

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("premath.mcp") is None or importlib.util.find_spec("mcp") is None,
    reason="needs the MCP server (premath.mcp) and the mcp SDK",
)
REPO = Path(__file__).resolve().parents[2]


def write_envelope(root: Path, name: str) -> str:
    document = envelope(
        intent="Record the review outcome on bd-1.",
        scope={"kind": "issue", "target": "bd-1"},
        requestedChecks=["ci-wiring-check"],
        capabilityClaims=[
            "capabilities.change_morphisms",
            "capabilities.change_morphisms.issue_update",
        ],
        joinCheckInput="join/closed.json",
    )
    path = f"instructions/{name}.json"
    (root / path).write_text(json.dumps(document, indent=2))
    return path


def prepare(workdir: Path) -> None:
    """A repository with the instruction policies, a closed join input and issue bd-1."""
    shutil.copytree(REPO / "policies" / "instruction", workdir / "policies" / "instruction")
    (workdir / "instructions").mkdir()
    (workdir / "join").mkdir()
    (workdir / "join" / "closed.json").write_text(json.dumps(baseline()))
    make_issues(workdir, ["bd-1"])


def pipeline(cli_run, path: str, check_command: str) -> int:
    args = ("instruction-run", "--instruction", path, "--check-command", check_command)
    return cli_run(*args, "--allow-failure", "--json").exit_code


def test_envelope_to_witness_to_gated_issue_update(cli_run, workdir):
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    prepare(workdir)
    accepted = write_envelope(workdir, "20260301T000000Z-review")
    rejected = write_envelope(workdir, "20260301T000001Z-review-failing")
    assert pipeline(cli_run, accepted, "true {check}") == 0
    assert pipeline(cli_run, rejected, "false {check}") == 0  # --allow-failure: witness kept

    async def scenario():
        params = StdioServerParameters(
            command=sys.executable,
            # the pipeline ran on the frozen test clock: its witnesses are months "old"
            args=["-m", "premath", "mcp-serve", "--witness-max-age", "none"],
            cwd=str(workdir),
            env=server_env(),
        )
        with open(workdir / "server.stderr", "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                outcomes = {}
                for instruction_id in (
                    "20260301T000000Z-review",
                    "20260301T000001Z-review-failing",
                    "20260301T000002Z-never-run",
                ):
                    result = await client.call_tool(
                        "issue_update",
                        {"id": "bd-1", "notes": "reviewed", "instructionId": instruction_id},
                    )
                    outcomes[instruction_id] = (bool(result.is_error), result.content[0].text)
                return outcomes

    before = (workdir / ".premath" / "issues.jsonl").read_bytes()
    outcomes = anyio.run(scenario)
    error, text = outcomes["20260301T000000Z-review"]
    assert not error, text
    link = orjson.loads(text)["writeWitness"]["instruction"]
    assert (link["instructionId"], link["joinClosed"]) == ("20260301T000000Z-review", True)
    error, text = outcomes["20260301T000001Z-review-failing"]
    assert error
    assert "is not accepted for `20260301T000001Z-review-failing`" in text
    error, text = outcomes["20260301T000002Z-never-run"]
    assert (error, text.startswith("instruction witness not found: ")) == (True, True)
    rows = [
        orjson.loads(line) for line in (workdir / ".premath/issues.jsonl").read_bytes().splitlines()
    ]
    assert rows[0]["notes"] == "reviewed"
    assert before != (workdir / ".premath" / "issues.jsonl").read_bytes()


def test_the_pipeline_signs_its_witness_beside_it_and_boot_reads_only_witnesses(cli_run, workdir):
    """`instruction-run` writes `<id>.json.mac` (D22-3); the witness bytes are unchanged, the
    MAC verifies, and `harness boot` (which lists `*.json`) never takes the sidecar for one."""
    from premath.store.witness_mac import load_keyring, verify

    prepare(workdir)
    accepted = write_envelope(workdir, "20260301T000000Z-review")
    assert pipeline(cli_run, accepted, "true {check}") == 0
    folder = workdir / "artifacts" / "ciwitness"
    assert sorted(p.name for p in folder.iterdir()) == [
        "20260301T000000Z-review.json",
        "20260301T000000Z-review.json.mac",
    ]
    witness = folder / "20260301T000000Z-review.json"
    data = witness.read_bytes()
    assert orjson.loads(data)["verdictClass"] == "accepted"
    assert data.endswith(b"}\n")
    verified = verify(str(witness), data, "`x`", load_keyring())
    assert verified.run_id.startswith("run1_")
    boot = cli_run("harness", "boot", "--json")
    roots = {root["name"]: root for root in boot.json["memoryRoots"]["roots"]}
    assert roots["instructionWitnesses"]["count"] == 1
    assert roots["instructionWitnesses"]["state"] == "present"
    # a re-run from the CLI (a trusted local user) replaces the witness and signs it again
    assert pipeline(cli_run, accepted, "true {check}") == 0
    assert (
        verify(str(witness), witness.read_bytes(), "`x`", load_keyring()).run_id != verified.run_id
    )
