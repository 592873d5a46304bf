"""`premath issue`: what a user sees (JSON documents, exit codes, file bytes), in-process."""

import os
import subprocess
import sys

import orjson
import pytest

from tests.support.cli import run_premath
from tests.support.markers import marker_of

STAMP = "2026-02-22T00:00:00Z"
ISSUES = ".premath/issues.jsonl"


def row(issue_id: str, **fields) -> dict:
    base = {
        "id": issue_id,
        "title": fields.pop("title", issue_id),
        "status": fields.pop("status", "open"),
        "priority": fields.pop("priority", 2),
        "issue_type": "task",
    }
    lease = fields.pop("lease", None)
    assignee = fields.pop("assignee", None)
    if assignee:
        base["assignee"] = assignee
    if lease:
        base["lease"] = lease
    base.update({"created_at": STAMP, "updated_at": STAMP, "ephemeral": False})
    base.update(fields)
    return base


def lease(issue_id: str, owner: str, expires: str, lease_id: str | None = None) -> dict:
    return {
        "lease_id": lease_id or f"lease1_{issue_id}_{owner}",
        "owner": owner,
        "acquired_at": STAMP,
        "expires_at": expires,
    }


def seed(workdir, *rows: dict, path: str = ISSUES) -> bytes:
    target = workdir / path
    target.parent.mkdir(parents=True, exist_ok=True)
    data = b"".join(orjson.dumps(r) + b"\n" for r in rows)
    target.write_bytes(data)
    return data


def stored(workdir, path: str = ISSUES) -> dict[str, dict]:
    lines = (workdir / path).read_bytes().splitlines()
    return {r["id"]: r for r in map(orjson.loads, lines)}


FUTURE = "2099-01-01T00:00:00Z"
PAST = "2000-01-01T00:00:00Z"


def test_add_fills_the_smallest_free_id_and_writes_stored_rows(cli_run, workdir):
    seed(workdir, row("bd-1"), row("bd-3"))
    out = cli_run("issue", "add", "Second", "--description", "d", "--priority", "1", "--json")
    assert out.exit_code == 0
    assert "issue_graph.acceptance.missing" in out.stderr  # D25-3: "d" is no workable issue
    assert out.json == {
        "action": "issue.add",
        "issuesPath": ISSUES,
        "issue": {
            "id": "bd-2",
            "title": "Second",
            "status": "open",
            "priority": 1,
            "issueType": "task",
            "assignee": "",
            "owner": "",
        },
    }
    lines = (workdir / ISSUES).read_bytes().splitlines()
    assert lines[1] == (
        b'{"id":"bd-2","title":"Second","description":"d","status":"open","priority":1,'
        b'"issue_type":"task","created_at":"2026-03-01T10:00:00Z",'
        b'"updated_at":"2026-03-01T10:00:00Z","ephemeral":false}'
    )
    assert [orjson.loads(line)["id"] for line in lines] == ["bd-1", "bd-2", "bd-3"]


def test_add_refuses_a_duplicate_id_and_leaves_the_store(cli_run, workdir):
    before = seed(workdir, row("bd-1"))
    out = cli_run("issue", "add", "Again", "--id", "bd-1", "--json")
    assert out.exit_code == 1
    assert out.json == {"error": {"code": "conflict", "message": "issue already exists: bd-1"}}
    assert out.stderr == "error: issue already exists: bd-1\n"
    assert (workdir / ISSUES).read_bytes() == before
    assert not (workdir / f"{ISSUES}.lock").exists()


def test_add_refuses_an_unknown_type_before_creating_anything(cli_run, workdir):
    out = cli_run("issue", "add", "Bug", "--type", "bug")
    assert out.exit_code == 1
    assert "expected one of: epic, task" in out.stderr
    assert not (workdir / ".premath").exists()


def test_update_without_fields_and_with_both_note_sources(cli_run, workdir):
    seed(workdir, row("bd-1"))
    out = cli_run("issue", "update", "bd-1", "--json")
    assert (out.exit_code, out.json["error"]["message"]) == (1, "no update fields provided")
    both = cli_run("issue", "update", "bd-1", "--notes", "a", "--notes-file", "-")
    assert both.exit_code == 2


def test_notes_from_stdin_read_line_ends_as_newlines_and_refuse_bad_utf8(cli_run, workdir):
    seed(workdir, row("bd-1"))
    out = cli_run("issue", "update", "bd-1", "--notes-file", "-", "--json", stdin="a\r\nb é\n")
    assert out.exit_code == 0, out.stderr
    assert stored(workdir)["bd-1"]["notes"] == "a\nb é\n"
    bad = run_premath(
        "issue", "update", "bd-1", "--notes-file", "-", "--json", cwd=workdir, stdin=b"\xff"
    )
    assert (bad.returncode, orjson.loads(bad.stdout)["error"]) == (
        1,
        {
            "code": "io_error",
            "message": "failed to read notes file `-`: stream did not contain valid UTF-8",
        },
    )


def test_update_unknown_issue_and_missing_file(cli_run, workdir):
    missing = cli_run("issue", "update", "bd-1", "--title", "x", "--json")
    assert missing.json["error"] == {
        "code": "not_found",
        "message": f"issues file not found: {ISSUES}",
    }
    assert not (workdir / ".premath").exists()
    seed(workdir, row("bd-1"))
    out = cli_run("issue", "update", "bd-9", "--title", "x", "--json")
    assert (out.exit_code, out.json["error"]["message"]) == (1, "issue not found: bd-9")


def test_closing_releases_the_lease_and_keeps_the_assignee(cli_run, workdir):
    seed(workdir, row("bd-1", status="in_progress", assignee="w", lease=lease("bd-1", "w", FUTURE)))
    out = cli_run("issue", "update", "bd-1", "--status", "closed", "--json")
    assert out.exit_code == 0
    assert stored(workdir)["bd-1"] == {
        **row("bd-1", status="closed", assignee="w"),
        "updated_at": "2026-03-01T10:00:00Z",
        "closed_at": "2026-03-01T10:00:00Z",
    }


def test_claim_reports_the_lease_with_offset_times(cli_run, workdir):
    seed(workdir, row("bd-1"))
    out = cli_run("issue", "claim", "bd-1", "--assignee", " w.1 ", "--json")
    assert out.exit_code == 0
    assert out.json["issue"]["lease"] == {
        "leaseId": "lease1_bd-1_w_1",
        "owner": "w.1",
        "acquiredAt": "2026-03-01T10:00:00+00:00",
        "expiresAt": "2026-03-01T11:00:00+00:00",
        "renewedAt": None,
    }


@pytest.mark.parametrize(
    ("target", "failure_class", "code"),
    [
        ("bd-1", "lease_contention_active", "lease_refused"),
        ("bd-2", "lease_contention_active", "lease_refused"),
        ("bd-3", "lease_issue_closed", "lease_refused"),
        ("bd-404", "lease_not_found", "not_found"),
    ],
)
def test_claim_rejections_name_the_failure_class(cli_run, workdir, target, failure_class, code):
    before = seed(
        workdir,
        row("bd-1", status="in_progress", assignee="bob", lease=lease("bd-1", "bob", FUTURE)),
        row("bd-2", assignee="bob"),
        row("bd-3", status="closed", closed_at=STAMP),
    )
    out = cli_run("issue", "claim", target, "--assignee", "alice", "--json")
    assert out.exit_code == 1
    assert out.json["error"]["code"] == code
    assert out.json["error"]["message"].endswith(f"({failure_class})")
    assert (workdir / ISSUES).read_bytes() == before


def test_claim_next_reclaims_a_stale_in_progress_issue_d3_1(cli_run, workdir):
    """Divergence D3-1, on the corpus scenario issue.claim-next.skips: bd-3 comes first."""
    seed(
        workdir,
        row("bd-1", assignee="bob"),
        row("bd-2", dependencies=[{"issue_id": "bd-2", "depends_on_id": "bd-9", "type": "blocks"}]),
        row("bd-3", status="in_progress", assignee="bob", lease=lease("bd-3", "bob", PAST, "l3")),
        row("bd-4", assignee="bob", lease=lease("bd-4", "bob", FUTURE, "l4")),
        row("bd-5", assignee="bob", lease=lease("bd-5", "bob", PAST, "l5")),
        row("bd-9"),
    )
    claimed = []
    for _ in range(4):
        out = cli_run("issue", "claim-next", "--assignee", "alice", "--json")
        assert out.exit_code == 0, out.stderr
        claimed.append(out.json["issue"] and out.json["issue"]["id"])
    assert claimed == ["bd-3", "bd-5", "bd-9", None]
    bd3 = stored(workdir)["bd-3"]
    assert (bd3["status"], bd3["assignee"], bd3["lease"]["lease_id"]) == (
        "in_progress",
        "alice",
        "lease1_bd-3_alice",
    )
    assert stored(workdir)["bd-4"]["lease"]["owner"] == "bob"


def test_claim_next_orders_by_priority_then_natural_id_d3_2(cli_run, workdir):
    seed(
        workdir,
        row("bd-10", priority=1),
        row("bd-2", priority=1),
        row("bd-1", priority=3),
        row("bd-7", priority=0, status="closed", closed_at=STAMP),
        row("bd-30", priority=0),
    )
    order = []
    for _ in range(5):
        issue = cli_run("issue", "claim-next", "--assignee", "w", "--json").json["issue"]
        order.append(issue and issue["id"])
    assert order == ["bd-30", "bd-2", "bd-10", "bd-1", None]


def test_claim_next_ttl_bounds_and_blank_assignee(cli_run, workdir):
    before = seed(workdir, row("bd-1"))
    low = cli_run("issue", "claim-next", "--assignee", "w", "--lease-ttl-seconds", "29", "--json")
    assert low.json["error"]["message"] == "lease_ttl_seconds must be in range [30, 86400] (got 29)"
    blank = cli_run("issue", "claim-next", "--assignee", "  ", "--json")
    assert blank.json["error"]["message"] == "assignee is required"
    assert (workdir / ISSUES).read_bytes() == before
    ok = cli_run("issue", "claim-next", "--assignee", "w", "--lease-ttl-seconds", "30", "--json")
    assert ok.json["issue"]["lease"]["expiresAt"] == "2026-03-01T10:00:30+00:00"


def test_claim_next_on_a_missing_store_fails_and_creates_no_file(cli_run, workdir):
    out = cli_run("issue", "claim-next", "--assignee", "w", "--json")
    assert out.exit_code == 1
    assert "lease_mutation_store_io" in out.json["error"]["message"]
    assert not (workdir / ".premath").exists()  # refused before the lock (D25-4)


def test_lease_renew_by_the_holder(cli_run, workdir, clock):
    seed(workdir, row("bd-1"))
    lease_id = cli_run("issue", "claim", "bd-1", "--assignee", "w", "--json").json["issue"][
        "lease"
    ]["leaseId"]
    clock.advance(600)
    out = cli_run(
        "issue", "lease-renew", "bd-1", "--assignee", "w", "--lease-id", lease_id,
        "--lease-ttl-seconds", "7200", "--json",
    )  # fmt: skip
    assert out.exit_code == 0, out.stderr
    assert out.json["action"] == "issue.lease_renew"
    assert out.json["issue"]["lease"] == {
        "leaseId": "lease1_bd-1_w",
        "owner": "w",
        "acquiredAt": "2026-03-01T10:00:00+00:00",
        "expiresAt": "2026-03-01T12:10:00+00:00",
        "renewedAt": "2026-03-01T10:10:00+00:00",
        "state": "active",
    }
    assert stored(workdir)["bd-1"]["lease"]["renewed_at"] == "2026-03-01T10:10:00Z"


@pytest.mark.parametrize(
    ("args", "failure_class"),
    [
        (("--assignee", "intruder", "--lease-id", "lease1_bd-1_w"), "lease_owner_mismatch"),
        (("--assignee", "w", "--lease-id", "other"), "lease_id_mismatch"),
        (("--assignee", "w", "--lease-id", " "), "lease_id_mismatch"),
        (("--assignee", " ", "--lease-id", "lease1_bd-1_w"), "lease_invalid_assignee"),
        (
            ("--assignee", "w", "--lease-id", "lease1_bd-1_w", "--lease-ttl-seconds", "60",
             "--lease-expires-at", "2099-01-01T00:00:00Z"),
            "lease_binding_ambiguous",
        ),
        (
            ("--assignee", "w", "--lease-id", "lease1_bd-1_w",
             "--lease-expires-at", "2001-01-01T00:00:00Z"),
            "lease_invalid_expires_at",
        ),
        (
            ("--assignee", "w", "--lease-id", "lease1_bd-1_w", "--lease-ttl-seconds", "86401"),
            "lease_invalid_ttl",
        ),
    ],
)  # fmt: skip
def test_lease_renew_refusals(cli_run, workdir, args, failure_class):
    seed(workdir, row("bd-1"))
    cli_run("issue", "claim", "bd-1", "--assignee", "w")
    before = (workdir / ISSUES).read_bytes()
    out = cli_run("issue", "lease-renew", "bd-1", *args, "--json")
    assert out.exit_code == 1
    assert out.json["error"]["message"].endswith(f"({failure_class})"), out.json
    assert (workdir / ISSUES).read_bytes() == before


def test_stale_or_missing_leases_cannot_be_renewed_or_released(cli_run, workdir):
    before = seed(
        workdir,
        row("bd-1", status="in_progress", assignee="w", lease=lease("bd-1", "w", PAST)),
        row("bd-2", assignee="w"),
    )
    for command in ("lease-renew", "lease-release"):
        stale = cli_run("issue", command, "bd-1", "--assignee", "w", "--lease-id", "lease1_bd-1_w")
        assert stale.exit_code == 1
        assert stale.stderr.startswith("error: lease expired at 2000-01-01T00:00:00Z: bd-1")
        assert stale.stderr.endswith("(lease_stale)\n")
        missing = cli_run("issue", command, "bd-2", "--assignee", "w", "--lease-id", "x", "--json")
        assert missing.json["error"]["message"] == "issue has no lease: bd-2 (lease_missing)"
    assert (workdir / ISSUES).read_bytes() == before


def test_lease_release_by_the_holder_reopens_the_issue(cli_run, workdir):
    seed(workdir, row("bd-1"))
    cli_run("issue", "claim", "bd-1", "--assignee", "w")
    refused = cli_run("issue", "lease-release", "bd-1", "--assignee", "x", "--json")
    assert refused.json["error"]["code"] == "lease_refused"
    assert "lease_owner_mismatch" in refused.json["error"]["message"]
    out = cli_run("issue", "lease-release", "bd-1", "--assignee", "w", "--json")
    assert out.exit_code == 0
    assert out.json["issue"]["status"] == "open"
    assert out.json["issue"]["lease"] is None
    assert stored(workdir)["bd-1"] == {**row("bd-1"), "updated_at": "2026-03-01T10:00:00Z"}
    ready = cli_run("issue", "ready", "--json")
    assert [i["id"] for i in ready.json["items"]] == ["bd-1"]


def test_lease_projection_lists_stale_and_contended(cli_run, workdir):
    seed(
        workdir,
        row("bd-1", status="in_progress", assignee="w", lease=lease("bd-1", "w", PAST)),
        row("bd-2", status="open", assignee="w", lease=lease("bd-2", "w", FUTURE)),
        row("bd-3", status="in_progress", assignee="x", lease=lease("bd-3", "w", FUTURE)),
        row("bd-4", status="in_progress", assignee="w", lease=lease("bd-4", "w", FUTURE)),
    )
    out = cli_run("issue", "lease-projection", "--json")
    assert out.json == {
        "action": "issue.lease_projection",
        "issuesPath": ISSUES,
        "checkedAt": "2026-03-01T10:00:00+00:00",
        "staleCount": 1,
        "staleIssueIds": ["bd-1"],
        "contendedCount": 2,
        "contendedIssueIds": ["bd-2", "bd-3"],
        "count": 4,
        "items": [
            {
                "id": issue_id,
                "status": status,
                "assignee": assignee,
                "lease": {
                    "leaseId": f"lease1_{issue_id}_w",
                    "owner": "w",
                    "acquiredAt": "2026-02-22T00:00:00+00:00",
                    "expiresAt": expires,
                    "renewedAt": None,
                    "state": state,
                },
                "contended": contended,
            }
            for issue_id, status, assignee, expires, state, contended in [
                ("bd-1", "in_progress", "w", "2000-01-01T00:00:00+00:00", "stale", False),
                ("bd-2", "open", "w", "2099-01-01T00:00:00+00:00", "active", True),
                ("bd-3", "in_progress", "x", "2099-01-01T00:00:00+00:00", "active", True),
                ("bd-4", "in_progress", "w", "2099-01-01T00:00:00+00:00", "active", False),
            ]
        ],
    }


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"id":"bd-1","title":"a"}\n\0\n', "corrupted substrate: {path}: contains NUL byte(s)"),
        (
            b'{"id":"bd-1","title":"\xff"}\n',
            "corrupted substrate: {path}: contains non-UTF-8 byte sequence(s)",
        ),
        (
            b'{"id":"bd-1","title":"a"}\n\n# note\n{"id":"bd-2"}\n',
            "line 4: parse error: missing field `title`",
        ),
        (
            b'{"id":"bd-1","title":"a","priority":1.0}\n',
            "line 1: parse error: invalid type: floating point `1.0`, expected i32 "
            "(field `priority`)",
        ),
    ],
)
def test_malformed_stores_are_refused_untouched(cli_run, workdir, content, message):
    target = workdir / ISSUES
    target.parent.mkdir()
    target.write_bytes(content)
    for argv in (("issue", "ready"), ("issue", "claim-next", "--assignee", "w")):
        out = cli_run(*argv, "--json")
        assert out.exit_code == 1
        assert out.json["error"] == {
            "code": "artifact_invalid",
            "message": f"failed to load {ISSUES}: " + message.format(path=ISSUES),
        }
    assert target.read_bytes() == content
    assert sorted(p.name for p in target.parent.iterdir()) == ["issues.jsonl"]


def test_duplicate_ids_resolve_last_write_wins_and_compact_on_rewrite(cli_run, workdir):
    seed(workdir, row("bd-1", title="old"), row("bd-2"), row("bd-1", title="new"))
    listed = cli_run("issue", "list", "--json").json
    assert [(i["id"], i["title"]) for i in listed["items"]] == [("bd-1", "new"), ("bd-2", "bd-2")]
    cli_run("issue", "update", "bd-2", "--priority", "1")
    lines = (workdir / ISSUES).read_bytes().splitlines()
    assert [orjson.loads(line)["title"] for line in lines] == ["new", "bd-2"]


def test_torn_last_line_readers_skip_it_writers_refuse_d3_5(cli_run, workdir):
    data = seed(workdir, row("bd-1")) + b'{"id":"bd-2","tit'
    (workdir / ISSUES).write_bytes(data)
    ready = cli_run("issue", "ready", "--json")
    assert [i["id"] for i in ready.json["items"]] == ["bd-1"]
    assert "skipped an incomplete last line" in ready.stderr
    claim = cli_run("issue", "claim-next", "--assignee", "w", "--json")
    assert (claim.exit_code, claim.json["error"]["code"]) == (1, "artifact_invalid")
    assert (workdir / ISSUES).read_bytes() == data


def test_a_live_lock_past_the_timeout_is_lock_busy(cli_run, workdir):
    before = seed(workdir, row("bd-1"))
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        lock = workdir / f"{ISSUES}.lock"
        lock.write_text(marker_of(holder.pid))
        out = cli_run("issue", "claim-next", "--assignee", "w", "--json")
    finally:
        holder.kill()
        holder.wait()
    assert out.exit_code == 1
    assert out.json["error"] == {
        "code": "lock_busy",
        "message": f"issue-memory lock busy: {ISSUES}.lock",
    }
    assert (workdir / ISSUES).read_bytes() == before
    assert lock.exists()


def test_a_lock_left_by_a_dead_process_is_broken_and_reported(cli_run, workdir):
    seed(workdir, row("bd-1"))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock = workdir / f"{ISSUES}.lock"
    lock.write_text(marker_of(dead.pid))
    out = cli_run("issue", "claim-next", "--assignee", "w", "--json")
    assert out.exit_code == 0, out.stderr
    assert out.json["issue"]["id"] == "bd-1"
    assert f"removed stale lock {ISSUES}.lock left by process {dead.pid}" in out.stderr
    assert not lock.exists()


def test_check_rejects_and_exits_one(cli_run, workdir):
    seed(
        workdir,
        row("bd-1", title="[EPIC] big"),
        row(
            "bd-2",
            description="Acceptance:\n- works",
            notes="- `mise run test`\n" + "x" * 2000,
        ),
        row("bd-3", status="closed", closed_at=STAMP),
    )
    out = cli_run("issue", "check", "--json")
    assert out.exit_code == 1
    assert out.json["result"] == "rejected"
    assert out.json["failureClasses"] == [
        "issue_graph.acceptance.missing",
        "issue_graph.issue_type.epic_mismatch",
        "issue_graph.verification_command.missing",
    ]
    assert [w["issueId"] for w in out.json["warnings"]] == ["bd-2"]
    assert out.json["summary"] == {
        "issueCount": 3,
        "errorCount": 3,
        "warningCount": 1,
        "noteWarnThreshold": 2000,
    }
    relaxed = cli_run("issue", "check", "--note-warn-threshold", "5000", "--json")
    assert relaxed.json["warnings"] == []


def test_check_accepts_a_well_formed_graph(cli_run, workdir):
    seed(workdir, row("bd-1", description="acceptance criteria:\n- ok\n\n`pytest -q`"))
    out = cli_run("issue", "check")
    assert (out.exit_code, out.stdout) == (0, "[issue-graph] OK (issues=1, errors=0, warnings=0)\n")


def test_blocked_lists_manual_and_dependency_blocks(cli_run, workdir):
    seed(
        workdir,
        row("bd-root"),
        row(
            "bd-child",
            dependencies=[{"issue_id": "bd-child", "depends_on_id": "bd-root", "type": "blocks"}],
        ),
        row("bd-manual", status="blocked"),
        row(
            "bd-gone",
            status="in_progress",
            dependencies=[{"issue_id": "bd-gone", "depends_on_id": "bd-x", "type": "waits-for"}],
        ),
    )
    out = cli_run("issue", "blocked", "--json")
    assert out.json["items"] == [
        {
            "id": "bd-child",
            "title": "bd-child",
            "status": "open",
            "priority": 2,
            "manualBlocked": False,
            "blockers": [
                {
                    "issueId": "bd-child",
                    "dependsOnId": "bd-root",
                    "type": "blocks",
                    "createdBy": "",
                    "blockerStatus": "open",
                    "blockerMissing": False,
                }
            ],
        },
        {
            "id": "bd-gone",
            "title": "bd-gone",
            "status": "in_progress",
            "priority": 2,
            "manualBlocked": False,
            "blockers": [
                {
                    "issueId": "bd-gone",
                    "dependsOnId": "bd-x",
                    "type": "waits-for",
                    "createdBy": "",
                    "blockerStatus": None,
                    "blockerMissing": True,
                }
            ],
        },
        {
            "id": "bd-manual",
            "title": "bd-manual",
            "status": "blocked",
            "priority": 2,
            "manualBlocked": True,
            "blockers": [],
        },
    ]


def test_real_process_claim_next_prints_one_document(tmp_path):
    seed(tmp_path, row("bd-1"))
    proc = subprocess.run(
        [sys.executable, "-m", "premath", "issue", "claim-next", "--assignee", "w", "--json"],
        cwd=tmp_path,
        capture_output=True,
        check=False,
        env={**os.environ, "PREMATH_LOCK_TIMEOUT_SECONDS": "5"},
    )
    assert (proc.returncode, proc.stderr) == (0, b"")
    assert orjson.loads(proc.stdout)["issue"]["lease"]["leaseId"] == "lease1_bd-1_w"


def test_temp_files_of_dead_writers_are_removed_under_the_lock(cli_run, workdir):
    seed(workdir, row("bd-1"))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    folder = workdir / ".premath"
    orphans = [f".issues.jsonl.tmp.{dead.pid}.1", f"issues.jsonl.tmp.{dead.pid}.2"]
    live = f".issues.jsonl.tmp.{alive.pid}.3"
    try:
        for name in [*orphans, live, "issues.jsonl.tmp.notes"]:
            (folder / name).write_text("partial")
        assert cli_run("issue", "claim-next", "--assignee", "w").exit_code == 0
        left = sorted(p.name for p in folder.iterdir())
    finally:
        alive.kill()
        alive.wait()
    assert left == sorted([live, "issues.jsonl", "issues.jsonl.tmp.notes"])


def test_text_output_of_lease_commands(cli_run, workdir):
    seed(workdir, row("bd-1"), row("bd-2", status="blocked"))
    claimed = cli_run("issue", "claim-next", "--assignee", "w")
    assert claimed.stdout == (
        "premath issue claim-next\n  Claimed: bd-1 -> w [in_progress]\n"
        "  Path: .premath/issues.jsonl\n"
    )
    none = cli_run("issue", "claim-next", "--assignee", "w")
    assert none.stdout == (
        "premath issue claim-next\n  Claimed: none (no ready/open issue)\n"
        "  Path: .premath/issues.jsonl\n"
    )
    renewed = cli_run(
        "issue", "lease-renew", "bd-1", "--assignee", "w", "--lease-id", "lease1_bd-1_w"
    )
    assert renewed.stdout == (
        "premath issue lease-renew\n"
        "  Renewed: bd-1 [in_progress]\n"
        "  Lease: lease1_bd-1_w (owner w, expires 2026-03-01T11:00:00+00:00)\n"
        "  Path: .premath/issues.jsonl\n"
    )
    released = cli_run("issue", "lease-release", "bd-1", "--assignee", "w")
    assert released.stdout == (
        "premath issue lease-release\n  Released: bd-1 [open]\n  Path: .premath/issues.jsonl\n"
    )
    blocked = cli_run("issue", "blocked")
    assert blocked.stdout == (
        "premath issue blocked\n  Path: .premath/issues.jsonl\n  Count: 1\n"
        "  - bd-2 [blocked p2 manual_blocked=true] bd-2\n"
    )


def test_a_lock_that_cannot_be_created_is_an_io_error(cli_run, workdir):
    (workdir / "afile").write_text("not a folder")
    out = cli_run("issue", "add", "t", "--issues", "afile/x.jsonl", "--json")
    assert out.exit_code == 1
    assert out.json["error"]["code"] == "io_error"
    assert out.json["error"]["message"].startswith(
        "failed to acquire issue-memory lock afile/x.jsonl.lock: "
    )


def test_text_output_of_blocked_and_check_follows_the_reference(cli_run, workdir):
    seed(
        workdir,
        row(
            "bd-1",
            description="Acceptance:\n- x",
            notes="y" * 30,
            dependencies=[
                {"issue_id": "bd-1", "depends_on_id": "bd-9", "type": "blocks", "created_by": "me"}
            ],
        ),
    )
    blocked = cli_run("issue", "blocked")
    assert blocked.stdout == (
        "premath issue blocked\n  Path: .premath/issues.jsonl\n  Count: 1\n"
        "  - bd-1 [open p2 manual_blocked=false] bd-1\n"
        "    blocker: bd-9 (type=blocks, status=missing, created_by=me)\n"
    )
    check = cli_run("issue", "check", "--note-warn-threshold", "10")
    assert (check.exit_code, check.stdout) == (
        1,
        "[issue-graph] FAIL (issues=1, errors=1, warnings=1)\n"
        "  - bd-1 issue_graph.verification_command.missing "
        "(active issue must include at least one verification command)\n"
        "  - WARN bd-1 issue_graph.notes.large "
        "(notes payload exceeds warning threshold (len=30, threshold=10))\n",
    )
