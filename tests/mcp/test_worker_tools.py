"""The worker registry's MCP tools on a real `mcp-serve --transport streamable-http`, driven by
the SDK's client: a worker registers, heartbeats and deregisters only as the ids its token allows
(specs/remote-workers.md "Worker identity"), a forged id is refused and logged, a heartbeat flood
is not stored each, `harness_workers` reads the registry; over stdio (no token) every id goes."""

import anyio
import orjson

from tests.cli.test_issue import row, seed
from tests.mcp.client import call, http_server, http_session, new_token, session, token_file

REGISTER = {"host": "h1", "node": "h1/n1", "pid": 7, "premathVersion": "0.1.0"}


def registry(workdir) -> dict:
    return orjson.loads((workdir / ".premath" / "harness_workers.json").read_bytes())["workers"]


def test_a_token_acts_only_as_its_own_worker_ids_and_a_forgery_is_refused_and_logged(workdir):
    seed(workdir, row("bd-1"))
    fleet, other = new_token(), new_token()
    path = token_file(workdir, fleet=fleet, w2=other)
    outcomes = {}

    async def scenario(url: str) -> None:
        async with http_session(url, fleet) as client:
            for worker_id in ("fleet", "fleet.1", "w2", "fleetx", "fleet.1.x"):
                arguments = {"workerId": worker_id, **REGISTER}
                outcomes[worker_id] = await call(client, "harness_worker_register", arguments)
            beat = {"workerId": "w2", "phase": "working", "issueId": "bd-1"}
            outcomes["beat w2"] = await call(client, "harness_worker_heartbeat", beat)
            outcomes["bye w2"] = await call(client, "harness_worker_deregister", {"workerId": "w2"})
        async with http_session(url, other) as client:
            outcomes["w2 own"] = await call(client, "harness_worker_register", {"workerId": "w2"})
            beat = {"workerId": "fleet.1", "phase": "idle"}
            outcomes["w2 as fleet.1"] = await call(client, "harness_worker_heartbeat", beat)
            outcomes["list"] = await call(client, "harness_workers", {})

    with http_server(workdir, "--token-file", str(path)) as server:
        anyio.run(scenario, server.url)
        lines = server.access_lines()
    allowed = {name: outcomes[name][0] for name in ("fleet", "fleet.1", "fleet.1.x", "w2 own")}
    assert allowed == {"fleet": False, "fleet.1": False, "fleet.1.x": False, "w2 own": False}
    for name in ("w2", "fleetx", "beat w2", "bye w2", "w2 as fleet.1"):
        error, text = outcomes[name]
        assert error, name
        assert text.startswith("[failureClass=worker.identity_refused] the token `"), text
    assert outcomes["w2"][1].startswith(
        "[failureClass=worker.identity_refused] the token `fleet` may not act as worker w2: "
    )
    assert sorted(registry(workdir)) == ["fleet", "fleet.1", "fleet.1.x", "w2"]
    assert registry(workdir)["w2"]["phase"] == "idle"  # the forged beat changed nothing
    listed = outcomes["list"][1]
    assert [w["workerId"] for w in listed["workers"]] == ["fleet", "fleet.1", "fleet.1.x", "w2"]
    assert listed["counts"] == {"running": 4, "silent": 0, "gone": 0}
    refused = [
        (line["caller"], line["tool"])
        for line in lines
        if line.get("event") == "tool" and line.get("failureClass") == "worker.identity_refused"
    ]
    assert sorted(refused) == sorted(
        [
            ("fleet", "harness_worker_register"),
            ("fleet", "harness_worker_register"),
            ("fleet", "harness_worker_heartbeat"),
            ("fleet", "harness_worker_deregister"),
            ("w2", "harness_worker_heartbeat"),
        ]
    )


def test_one_token_is_one_trust_domain_and_a_flood_is_not_stored_each(workdir):
    seed(workdir, row("bd-1"))
    token = new_token()
    path = token_file(workdir, ops=token)
    answers = []

    async def scenario(url: str) -> None:
        async with http_session(url, token) as client:
            error, _ = await call(client, "harness_worker_register", {"workerId": "fleet.3"})
            assert not error
            for n in range(60):
                beat = {"workerId": "fleet.3", "phase": "working", "attempt": n}
                answers.append(await call(client, "harness_worker_heartbeat", beat))

    with http_server(workdir, "--token-file", str(path)) as server:
        anyio.run(scenario, server.url)
    assert all(not error for error, _ in answers)
    stored = [document["stored"] for _, document in answers]
    kept = registry(workdir)["fleet.3"]
    assert kept["heartbeatCount"] == stored.count(True)
    assert 3 <= stored.count(True) < 20  # a burst, then about one a second
    assert kept["attempt"] == max(n for n, (_, d) in enumerate(answers) if d["stored"])


def test_over_stdio_the_local_user_registers_any_worker_and_unknown_workers_are_refused(workdir):
    seed(workdir, row("bd-1"))
    results = []

    async def scenario() -> None:
        async with session(workdir) as client:
            for name, arguments in (
                ("harness_worker_heartbeat", {"workerId": "w9", "phase": "idle"}),
                ("harness_worker_register", {"workerId": "w9", "heartbeatSeconds": 0}),
                ("harness_worker_register", {"workerId": "w9", "heartbeatSeconds": 2}),
                ("harness_worker_heartbeat", {"workerId": "w9", "phase": "napping"}),
                ("harness_worker_deregister", {"workerId": "w9", "reason": "drained"}),
                ("harness_workers", {}),
            ):
                results.append(await call(client, name, arguments))

    anyio.run(scenario)
    unknown, zero, registered, bad_phase, gone, listed = results
    assert unknown == (
        True,
        "[failureClass=worker.not_registered] worker w9 is not registered at this authority: "
        "register it again (harness_worker_register)",
    )
    assert zero == (True, "heartbeatSeconds must be in [0.5, 3600]")
    assert registered[0] is False
    assert bad_phase[0] is True
    assert "unknown variant `napping`" in bad_phase[1]
    assert gone[1]["worker"]["state"] == "gone"
    assert [(w["workerId"], w["status"], w["goneReason"]) for w in listed[1]["workers"]] == [
        ("w9", "gone", "drained")
    ]
