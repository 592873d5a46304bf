"""`premath dep`: edge edits with the reference's checks and messages, views and diagnostics."""

import orjson
import pytest

from tests.cli.test_issue import ISSUES, row, seed, stored


def edge(source: str, target: str, kind: str = "blocks") -> dict:
    return {"issue_id": source, "depends_on_id": target, "type": kind}


@pytest.fixture
def chain(workdir):
    """a -> b -> c (blocks), d unconnected."""
    return seed(
        workdir,
        row("a", dependencies=[edge("a", "b")]),
        row("b", dependencies=[edge("b", "c", "related")]),
        row("c"),
        row("d"),
    )


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (("x", "a"), "not_found", "failed to add dependency: issue not found: x"),
        (("a", "x"), "not_found", "failed to add dependency: issue not found: x"),
        (
            ("a", "a"),
            "conflict",
            "failed to add dependency: dependency self-loop is not allowed: a (blocks)",
        ),
        (
            ("a", "b"),
            "conflict",
            "failed to add dependency: dependency already exists: a -> b (blocks)",
        ),
        (
            ("c", "a", "--type", "discovered-from"),
            "conflict",
            "failed to add dependency: dependency cycle detected: c -> a (discovered-from); "
            "path: c -> a -> b -> c",
        ),
    ],
)
def test_dep_add_refusals_leave_the_store(cli_run, workdir, chain, argv, code, message):
    out = cli_run("dep", "add", *argv, "--json")
    assert out.exit_code == 1
    assert out.json["error"] == {"code": code, "message": message}
    assert (workdir / ISSUES).read_bytes() == chain


def test_dep_add_appends_and_touches_only_the_source(cli_run, workdir, chain):
    out = cli_run("dep", "add", "d", "a", "--type", "waits-for", "--created-by", " me ")
    assert out.exit_code == 0
    assert (
        out.stdout
        == "premath dep add\n  Added: d -> a (waits-for)\n  Path: .premath/issues.jsonl\n"
    )
    rows = stored(workdir)
    assert rows["d"]["dependencies"] == [{**edge("d", "a", "waits-for"), "created_by": " me "}]
    assert rows["d"]["updated_at"] == "2026-03-01T10:00:00Z"
    assert rows["a"]["updated_at"] == "2026-02-22T00:00:00Z"
    ready = cli_run("issue", "ready", "--json").json
    assert [i["id"] for i in ready["items"]] == ["b", "c"]


def test_dep_remove_and_replace(cli_run, workdir, chain):
    missing = cli_run("dep", "remove", "b", "c", "--json")
    assert missing.json["error"]["message"] == (
        "failed to remove dependency: dependency not found: b -> c (blocks)"
    )
    assert cli_run("dep", "remove", "b", "c", "--type", "related").exit_code == 0
    assert "dependencies" not in stored(workdir)["b"]
    replaced = cli_run("dep", "replace", "a", "b", "--to-type", "parent-child", "--created-by", "x")
    assert replaced.exit_code == 0
    assert stored(workdir)["a"]["dependencies"] == [
        {**edge("a", "b", "parent-child"), "created_by": "x"}
    ]
    exists = cli_run("dep", "add", "a", "b", "--type", "related")
    assert exists.exit_code == 0
    clash = cli_run(
        "dep", "replace", "a", "b", "--from-type", "related", "--to-type", "parent-child"
    )
    assert clash.stderr == (
        "error: failed to replace dependency: dependency already exists: a -> b (parent-child)\n"
    )


def test_diagnostics_scopes_and_cycle_path(cli_run, workdir):
    seed(
        workdir,
        row("a", dependencies=[edge("a", "b", "related")]),
        row("b", status="in_progress", dependencies=[edge("b", "c")]),
        row("c", status=" OPEN ", dependencies=[edge("c", "a", "discovered-from")]),
        row("x", status="closed", dependencies=[edge("x", "x")]),
    )
    active = cli_run("dep", "diagnostics", "--json").json
    assert active["integrity"] == {"hasCycle": True, "cyclePath": ["a", "b", "c", "a"]}
    full = cli_run("dep", "diagnostics", "--graph-scope", "full", "--json").json
    assert full["integrity"]["cyclePath"] == ["a", "b", "c", "a"]
    (workdir / ISSUES).write_bytes(orjson.dumps(row("x", dependencies=[edge("x", "x")])) + b"\n")
    assert cli_run("dep", "diagnostics", "--json").json["integrity"]["cyclePath"] == ["x", "x"]


def test_diagnostics_on_a_long_acyclic_chain(cli_run, workdir):
    size = 3000
    seed(
        workdir,
        *(row(f"n{i}", dependencies=[edge(f"n{i}", f"n{i + 1}", "blocks")]) for i in range(size)),
        row(f"n{size}"),
    )
    out = cli_run("dep", "diagnostics", "--graph-scope", "full", "--json")
    assert out.json["integrity"] == {"hasCycle": False, "cyclePath": None}


def test_project_sorts_edges_and_rejects_unknown_views(cli_run, workdir, chain):
    out = cli_run("dep", "project", "--view", "gtd", "--json")
    assert [(i["issueId"], i["role"], i["blocking"]) for i in out.json["items"]] == [
        ("a", "next-action", True),
        ("b", "reference", False),
    ]
    assert cli_run("dep", "project", "--view", "kanban").exit_code == 2
