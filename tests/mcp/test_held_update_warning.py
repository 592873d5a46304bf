"""`issue update` of an issue someone else holds (issue 35, D35-4): accepted as the reference
accepts it, stored exactly as without the warning, and said: on stderr by the CLI, in a
`warnings` field of the MCP reply (over stdio and over HTTP, where the token id is the caller)."""

import anyio

from tests.cli.test_issue import FUTURE, ISSUES, PAST, lease, row, seed, stored
from tests.mcp.client import call, http_server, http_session, new_token, session, token_file

HELD = (
    "bd-1 is held by w2 (lease lease1_bd-1_w2 until 2099-01-01T00:00:00Z): updated anyway; w2 "
    "may still be working on it, so tell it or wait for the lease to end"
)


def held_store(workdir, expires: str = FUTURE) -> None:
    seed(
        workdir,
        row("bd-1", status="in_progress", assignee="w2", lease=lease("bd-1", "w2", expires)),
    )


def test_the_cli_names_the_holder_and_stores_what_it_would_without_the_warning(
    cli_run, workdir, monkeypatch
):
    monkeypatch.delenv("PREMATH_WORKER_ID", raising=False)
    held_store(workdir)
    warned = cli_run("issue", "update", "bd-1", "--notes", "from a person", "--json")
    assert (warned.exit_code, warned.stderr) == (0, f"warning: {HELD}\n")
    with_warning = (workdir / ISSUES).read_bytes()
    held_store(workdir)
    monkeypatch.setenv("PREMATH_WORKER_ID", "w2")  # the holder itself: nothing to say
    quiet = cli_run("issue", "update", "bd-1", "--notes", "from a person", "--json")
    assert (quiet.exit_code, quiet.stderr) == (0, "")
    assert (workdir / ISSUES).read_bytes() == with_warning  # byte for byte
    assert stored(workdir)["bd-1"]["lease"]["owner"] == "w2"  # the lease is untouched


def test_a_stale_or_missing_lease_is_not_held(cli_run, workdir, monkeypatch):
    monkeypatch.delenv("PREMATH_WORKER_ID", raising=False)
    held_store(workdir, PAST)
    assert cli_run("issue", "update", "bd-1", "--notes", "n").stderr == ""
    seed(workdir, row("bd-1"))
    assert cli_run("issue", "update", "bd-1", "--notes", "n").stderr == ""


def test_an_mcp_reply_carries_the_warning_and_an_unheld_reply_is_unchanged(workdir):
    held_store(workdir)

    async def scenario() -> tuple[dict, dict]:
        async with session(workdir, "--mutation-policy", "open") as client:
            _, warned = await call(client, "issue_update", {"id": "bd-1", "notes": "n"})
            seed(workdir, row("bd-1"))
            _, plain = await call(client, "issue_update", {"id": "bd-1", "notes": "n"})
            return warned, plain

    warned, plain = anyio.run(scenario)
    assert warned["warnings"] == [HELD]  # over stdio the caller is nobody's worker
    assert stored(workdir)["bd-1"]["notes"] == "n"
    assert "warnings" not in plain


def test_over_http_the_holder_s_own_token_hears_nothing(workdir):
    held_store(workdir)
    tokens = {"w2": new_token(), "w3": new_token()}
    path = token_file(workdir.parent, **tokens)

    async def update_as(url: str, name: str) -> dict:
        async with http_session(url, tokens[name]) as client:
            error, document = await call(client, "issue_update", {"id": "bd-1", "notes": name})
            assert not error, document
            return document

    with http_server(workdir, "--token-file", str(path), "--mutation-policy", "open") as server:
        holder = anyio.run(update_as, server.url, "w2")
        other = anyio.run(update_as, server.url, "w3")
    assert "warnings" not in holder
    assert other["warnings"] == [HELD]
