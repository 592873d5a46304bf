"""`premath mcp-serve` driven by the MCP SDK's client over stdio: tools listed, every tool
called, gated and ungated mutations, refusals; the server survives bad input."""

import anyio
import orjson
import pytest

from tests.cli.test_issue import ISSUES, PAST, lease, row, seed, stored
from tests.mcp.client import POLICY_DIGEST, call, session, witness
from tests.support.observation import minimal_surface

EXPECTED_TOOLS = [
    "issue_ready", "issue_list", "issue_check", "issue_backend_status", "issue_blocked",
    "issue_add", "issue_claim", "issue_lease_renew", "issue_lease_release", "issue_discover",
    "issue_update", "dep_add", "dep_remove", "dep_replace", "dep_diagnostics", "init_tool",
    "issue_lease_projection", "observe_latest", "observe_needs_attention", "observe_instruction",
    "observe_projection", "instruction_check", "instruction_run", "issue_claim_next",
    "issue_show", "issue_lease_finish",
    "harness_worker_register", "harness_worker_heartbeat", "harness_worker_deregister",
    "harness_workers", "harness_trajectory_append",
]  # fmt: skip


def run(coroutine) -> None:
    anyio.run(coroutine)


def sign_as_pipeline(path) -> None:
    """Give a witness file's current bytes a valid MAC (what the pipeline would write)."""
    from premath.store.witness_mac import ensure_keyring, new_run_id, sidecar_bytes

    data = path.read_bytes()
    (path.parent / f"{path.name}.mac").write_bytes(
        sidecar_bytes(ensure_keyring().signing, new_run_id(), data)
    )


def test_lists_tools_with_schemas_and_calls_every_read_tool(workdir):
    seed(
        workdir,
        row("bd-1"),
        row("bd-2", status="in_progress", assignee="w", lease=lease("bd-2", "w", PAST)),
    )
    surface = minimal_surface()
    required, instruction = surface["latest"]["required"], surface["instructions"][0]
    (workdir / "surface.json").write_bytes(orjson.dumps(surface))

    async def scenario():
        async with session(workdir, "--surface", "surface.json") as client:
            listed = (await client.list_tools()).tools
            assert [tool.name for tool in listed] == EXPECTED_TOOLS
            claim = next(tool for tool in listed if tool.name == "issue_claim")
            assert claim.input_schema["required"] == ["id", "assignee"]
            assert "lease_ttl_seconds" in claim.input_schema["properties"]
            error, ready = await call(client, "issue_ready")
            assert not error
            assert [item["id"] for item in ready["items"]] == ["bd-1"]
            assert ready["leaseProjection"]["staleIssueIds"] == ["bd-2"]
            assert ready["items"][0]["lease"] is None
            error, listing = await call(client, "issue_list", {"status": "in_progress"})
            assert listing["count"] == 1
            assert listing["items"][0]["lease"]["state"] == "stale"
            assert (await call(client, "issue_check"))[1]["action"] == "issue.check"
            assert (await call(client, "issue_blocked"))[1]["count"] == 0
            projection = (await call(client, "issue_lease_projection"))[1]
            assert projection["items"][0]["id"] == "bd-2"
            assert projection["projection"]["staleCount"] == 1
            scope = (await call(client, "dep_diagnostics", {"graph_scope": "full"}))[1]
            assert scope["integrity"]["hasCycle"] is False
            assert (await call(client, "observe_latest"))[1]["view"]["summary"]["state"] == "ok"
            attention = (await call(client, "observe_needs_attention"))[1]["view"]
            assert attention["needsAttention"] is False
            assert (await call(client, "observe_instruction", {"instructionId": "i-1"}))[1][
                "view"
            ] == instruction
            found = (await call(client, "observe_projection", {"projectionDigest": "ev1_x"}))[1]
            assert found["view"]["required"] == required
            error, text = await call(client, "observe_projection", {"projectionDigest": "proj1_x"})
            assert (error, text) == (
                True,
                "failed to query projection: projection not found: proj1_x",
            )
            alias = {"projectionDigest": "proj1_x", "projectionMatch": "compatibility_alias"}
            assert (await call(client, "observe_projection", alias))[1]["view"]["required"] == (
                required
            )
            error, text = await call(client, "observe_latest", {"surfacePath": "missing.json"})
            assert (error, text) == (
                True,
                "failed to load observation surface at missing.json: failed to read observation "
                "surface: No such file or directory (os error 2)",
            )
            error, text = await call(client, "issue_backend_status")
            assert error
            assert "not available" in text
            error, checked = await call(client, "instruction_check", {"instructionPath": "x.json"})
            assert (error, checked["ok"], checked["exitCode"], checked["stdout"]) == (
                False,
                False,
                2,
                "",
            )
            assert checked["stderr"].startswith("instruction_envelope_invalid: ")
            error, text = await call(client, "instruction_run", {"instructionPath": "x.json"})
            assert (error, text) == (
                True,
                "mutation policy `instruction-linked` requires `instruction_id` on mutation tools",
            )
            assert not (workdir / "artifacts" / "ciwitness" / "x.json").exists()
            witness(workdir, "i-run")
            error, ran = await call(
                client, "instruction_run", {"instructionPath": "x.json", "instructionId": "i-run"}
            )
            assert (error, ran["ok"], ran["exitCode"], ran["allowFailure"]) == (
                False,
                False,
                2,
                False,
            )
            assert ran["witnessExists"] is True
            assert ran["witnessPath"].endswith("/artifacts/ciwitness/x.json")

    run(scenario)


def test_instruction_linked_policy_gates_every_mutation(workdir):
    before = seed(workdir, row("bd-1"))

    async def scenario():
        async with session(workdir) as client:
            error, text = await call(client, "issue_claim", {"id": "bd-1", "assignee": "a"})
            assert (error, text) == (
                True,
                "mutation policy `instruction-linked` requires `instruction_id` on mutation tools",
            )
            error, text = await call(client, "issue_add", {"title": "t", "instructionId": "i-9"})
            assert (
                text == f"instruction witness not found: {workdir}/./artifacts/ciwitness/i-9.json"
            )
            error, text = await call(client, "issue_add", {"title": "t", "instructionId": "../x"})
            assert error
            assert "not found" in text
            # the stdio server applies the same witness rules as HTTP (D22-3)
            witness(workdir, "i-forged", signed=False)
            error, text = await call(
                client, "issue_claim", {"id": "bd-1", "assignee": "a", "instructionId": "i-forged"}
            )
            assert text.startswith("[failureClass=witness.mac_missing] instruction witness ")
            assert (workdir / ISSUES).read_bytes() == before
            witness(workdir, "i-1")
            error, claimed = await call(
                client, "issue_claim", {"id": "bd-1", "assignee": "a", "instruction_id": "i-1"}
            )
            assert not error
            assert claimed["instruction"]["policyDigest"] == POLICY_DIGEST
            stored_witness = stored(workdir)["bd-1"]["metadata"]["premathWriteWitness"]
            assert stored_witness == claimed["writeWitness"]
            assert stored_witness["witnessKind"] == "bd.issue.write.v1"
            assert stored_witness["mutationPolicy"] == "instruction-linked"
            # update is join-gated: no join evidence in the witness
            error, text = await call(
                client, "issue_update", {"id": "bd-1", "notes": "n", "instructionId": "i-1"}
            )
            assert text.startswith("[failureClass=mutation.use_evidence_missing] ")
            witness(workdir, "i-2", joinClosed=False, joinWitnessRef="join://x")
            error, text = await call(
                client, "issue_update", {"id": "bd-1", "notes": "n", "instructionId": "i-2"}
            )
            assert text.startswith("[failureClass=tool.join_incomplete] ")
            witness(workdir, "i-3", joinClosed=True)
            error, updated = await call(
                client, "issue_update", {"id": "bd-1", "notes": "n", "instructionId": "i-3"}
            )
            assert not error
            assert updated["writeWitness"]["instruction"]["joinClosed"] is True
            witness(workdir, "i-4", capabilityClaims=["capabilities.change_morphisms"])
            error, text = await call(
                client,
                "dep_add",
                {"issueId": "bd-1", "dependsOnId": "bd-1", "instructionId": "i-4"},
            )
            assert (
                "missing required action capability claim `capabilities.change_morphisms.dep_add`"
                in text
            )
            witness(workdir, "i-5", verdictClass="rejected")
            error, text = await call(
                client, "issue_lease_release", {"id": "bd-1", "instructionId": "i-5"}
            )
            assert text == "instruction witness is not accepted for `i-5` (verdictClass=rejected)"
            broken = witness(workdir, "i-6")
            broken.write_text("{broken")
            sign_as_pipeline(broken)
            error, text = await call(
                client, "issue_lease_release", {"id": "bd-1", "instructionId": "i-6"}
            )
            assert text.startswith("failed to parse instruction witness ")

    run(scenario)


def test_open_policy_mutations_and_lease_refusals(workdir):
    seed(
        workdir,
        row("bd-1"),
        row("bd-2", status="in_progress", assignee="dead", lease=lease("bd-2", "dead", PAST)),
    )

    async def scenario():
        async with session(workdir, "--mutation-policy", "open") as client:
            added = (await call(client, "issue_add", {"title": "New", "issue_type": "epic"}))[1]
            assert added["issue"]["id"] == "bd-3"
            found = (
                await call(client, "issue_discover", {"parent_issue_id": "bd-3", "title": "F"})
            )[1]
            assert found["dependency"] == {
                "issueId": "bd-4",
                "dependsOnId": "bd-3",
                "type": "discovered-from",
            }
            dep = (await call(client, "dep_add", {"issueId": "bd-1", "dependsOnId": "bd-3"}))[1]
            assert dep["dependency"]["createdBy"] == ""
            replaced = (
                await call(
                    client,
                    "dep_replace",
                    {"issueId": "bd-1", "dependsOnId": "bd-3", "toDepType": "related"},
                )
            )[1]
            assert replaced["dependency"]["toType"] == "related"
            removed = (
                await call(
                    client,
                    "dep_remove",
                    {"issueId": "bd-1", "dependsOnId": "bd-3", "dep_type": "related"},
                )
            )[1]
            assert removed["action"] == "dep.remove"
            _, text = await call(
                client, "dep_add", {"issueId": "bd-1", "dependsOnId": "bd-3", "depType": "nope"}
            )
            assert text.startswith("invalid dep_type `nope` (expected one of: blocks, ")
            claimed = (await call(client, "issue_claim_next", {"assignee": "a"}))[1]
            assert claimed["issue"]["id"] == "bd-1"
            _, text = await call(client, "issue_claim", {"id": "bd-1", "assignee": "b"})
            assert text == (
                "[failureClass=lease_contention_active] issue already leased: bd-1 "
                "(owner=a, lease_id=lease1_bd-1_a)"
            )
            renewed = (
                await call(
                    client,
                    "issue_lease_renew",
                    {
                        "id": "bd-1",
                        "assignee": "a",
                        "leaseId": "lease1_bd-1_a",
                        "leaseTtlSeconds": 60,
                    },
                )
            )[1]
            assert renewed["changed"] is True
            # stuck-worker recovery: anyone releases a dead worker's stale lease
            released = (await call(client, "issue_lease_release", {"id": "bd-2"}))[1]
            assert (released["changed"], released["issue"]["status"]) == (True, "open")
            unchanged = (await call(client, "issue_lease_release", {"id": "bd-2"}))[1]
            assert (unchanged["changed"], unchanged["writeWitness"]) == (False, None)
            updated = (await call(client, "issue_update", {"id": "bd-3", "status": "closed"}))[1]
            assert updated["issue"]["status"] == "closed"
            assert await call(client, "issue_update", {"id": "bd-3"}) == (
                True,
                "no update fields provided",
            )
            init = (await call(client, "init_tool", {"rootPath": "fresh"}))[1]
            assert (init["createdIssuesFile"], init["migratedFromLegacy"]) == (True, None)
        assert (workdir / "fresh" / ".premath" / "issues.jsonl").read_bytes() == b""

    run(scenario)


BAD_CALLS = [
    ("nope", {}, "Unknown tool: nope"),
    ("issue_claim", {"id": 1, "assignee": "a"}, "invalid type: integer `1`, expected a string"),
    ("issue_claim", {"assignee": "a"}, "missing field `id`"),
    (
        "issue_claim",
        {"id": "bd-1", "assignee": "a", "leaseId": "x", "lease_id": "y"},
        "duplicate field `leaseId`",
    ),
    ("issue_check", {"noteWarnThreshold": -1}, "invalid value: integer `-1`, expected u64"),
    (
        "dep_diagnostics",
        {"graphScope": "partial"},
        "unknown variant `partial`, expected `active` or `full`",
    ),
    (
        "issue_claim",
        {"id": "bd-1", "assignee": "a", "leaseTtlSeconds": "60"},
        'invalid type: string "60", expected i64',
    ),
    (
        "issue_claim",
        {"id": "bd-1", "assignee": "a", "leaseTtlSeconds": 5},
        "[failureClass=lease_invalid_ttl] lease_ttl_seconds must be in range [30, 86400]",
    ),
    (
        "issue_add",
        {"title": "x" * 2_000_000, "issueType": "bug"},
        "invalid issue_type `bug` (expected one of: epic, task)",
    ),
]


def test_bad_input_is_a_typed_refusal_and_the_server_keeps_serving(workdir):
    before = seed(workdir, row("bd-1"))

    async def scenario():
        async with session(workdir, "--mutation-policy", "open") as client:
            for name, arguments, message in BAD_CALLS:
                assert await call(client, name, arguments) == (True, message)
            result = await client.call_tool("issue_ready", None)
            assert result.is_error
            assert (workdir / ISSUES).read_bytes() == before
            (workdir / ISSUES).write_bytes(b"{corrupt\n" + before)
            error, text = await call(client, "issue_ready")
            assert error
            assert text.startswith(f"failed to load {ISSUES}: line 1: parse error: ")
            (workdir / ISSUES).unlink()
            assert await call(client, "issue_list") == (True, f"issues file not found: {ISSUES}")
            seed(workdir, row("bd-7"))
            assert (await call(client, "issue_ready"))[1]["items"][0]["id"] == "bd-7"

    run(scenario)


def test_malformed_json_rpc_does_not_stop_the_server(workdir):
    """Garbage lines and a call with malformed params are dropped by the SDK; the next request
    is still answered."""
    import subprocess
    import sys

    from tests.mcp.client import REPO_ROOT

    seed(workdir, row("bd-1"))
    requests = [
        b"this is not json",
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}',
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":"bad"}',
        b"[1,2",
        b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"issue_ready","arguments":{}}}',
    ]
    # As a client does, stdin stays open until the last answer came (EOF ends the session).
    server = subprocess.Popen(
        [sys.executable, "-m", "premath", "mcp-serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=workdir,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert server.stdin is not None
    assert server.stdout is not None
    server.stdin.write(b"\n".join(requests) + b"\n")
    server.stdin.flush()
    answers = {}
    while 3 not in answers:
        line = server.stdout.readline()
        assert line, "the server closed stdout before answering request 3"
        message = orjson.loads(line)
        answers[message.get("id")] = message
    server.stdin.close()
    assert server.wait(timeout=60) == 0
    server.stdout.close()
    assert set(answers) == {1, 3}
    ready = orjson.loads(answers[3]["result"]["content"][0]["text"])
    assert ready["items"][0]["id"] == "bd-1"


@pytest.mark.parametrize(
    ("option", "value"), [("--mutation-policy", "closed"), ("--issue-query-backend", "sql")]
)
def test_bad_options_fail_after_the_banner(cli_run, option, value):
    out = cli_run("mcp-serve", option, value)
    assert out.exit_code == 1
    assert out.stderr.startswith("premath mcp-serve\n  transport: stdio\n")
    assert "error: mcp server failed: invalid" in out.stderr


def test_help_does_not_import_the_sdk():
    import subprocess
    import sys

    from tests.mcp.client import REPO_ROOT

    code = (
        "import sys; from premath.cli import cli; import premath.cli.mcp_serve; "
        "print('mcp' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, cwd=REPO_ROOT, check=True
    )
    assert done.stdout == b"False\n"


def test_surreal_backend_keeps_the_projection_beside_the_store(workdir):
    seed(workdir, row("bd-1"), row("bd-2"))
    projection = workdir / ".premath" / "surreal_issue_cache.json"

    async def scenario():
        async with session(
            workdir, "--issue-query-backend", "surreal", "--mutation-policy", "open"
        ) as client:
            ready = (await call(client, "issue_ready"))[1]
            assert (ready["queryBackend"], ready["querySource"]) == (
                "surreal",
                "surreal-projection",
            )
            document = orjson.loads(projection.read_bytes())
            assert list(document)[:3] == ["schema", "kind", "sourceIssuesPath"]
            assert (document["issueCount"], document["sourceIssuesPath"]) == (2, ISSUES)
            assert not projection.read_bytes().endswith(b"\n")
            await call(client, "issue_claim", {"id": "bd-1", "assignee": "a"})
            rows = {r["id"]: r for r in orjson.loads(projection.read_bytes())["issues"]}
            assert rows["bd-1"]["status"] == "in_progress"
            assert rows["bd-1"] == stored(workdir)["bd-1"]

    run(scenario)


def test_truncation_cuts_at_a_character_boundary():
    from premath.mcp.tools import truncated

    text = "a" * 15_999 + "é" + "b" * 10
    cut = truncated(text)
    assert cut == "a" * 15_999 + "...[truncated 12 bytes]"
    assert truncated("short") == "short"
