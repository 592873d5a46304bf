"""`harness-loop coordinator`'s two executors keep their options apart (exit 2 before anything
runs), and the fleet's needs are named (specs/remote-workers.md "Placement on Ray")."""

import pytest

from tests.runner.test_ray_optional import _probe as probe

URL = ("--mcp-url", "http://127.0.0.1:9/mcp")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--executor", "ray"),
            "--executor ray needs --mcp-url (the authority every worker claims through) and "
            "--repo (what each worker clones and pushes its branches to)",
        ),
        (
            ("--executor", "ray", *URL),
            "--executor ray needs --mcp-url (the authority every worker claims through) and "
            "--repo (what each worker clones and pushes its branches to)",
        ),
        (
            ("--executor", "ray", *URL, "--repo", "r", "--worktree", ".", "--rounds", "2"),
            "--worktree, --rounds: not with --executor ray (its workers work in their own "
            "clones): --worktree: leave it out, each worker clones --repo on its node "
            "(--checkout-dir says where); --rounds: leave it out, the workers claim until nothing "
            "is ready or held (bound each one with --max-steps-per-worker)",
        ),
        (
            ("--executor", "ray", *URL, "--repo", "r", "--max-parallel", "2"),
            "--max-parallel: not with --executor ray (its workers work in their own clones): "
            "--max-parallel: use --concurrency, the number of workers on the cluster",
        ),
        (
            ("--executor", "ray", *URL, "--repo", "r", "--worker-timeout-seconds", "9"),
            "--worker-timeout-seconds: not with --executor ray (its workers work in their own "
            "clones): --worker-timeout-seconds: leave it out, Ctrl-C stops the fleet and a lost "
            "worker's issue is claimed again once its lease is stale",
        ),
        (
            ("--worktree", ".", "--concurrency", "4", "--worker-cpus", "0.5"),
            "--concurrency, --worker-cpus: only with --executor ray",
        ),
        (("--worktree", ".", *URL), "--mcp-url: only with --executor ray"),
        (
            ("--executor", "ray", *URL, "--base-ref", "main"),
            "--base-ref, --integration-branch, --land and --checkout-dir need --repo",
        ),
        (
            ("--executor", "ray", *URL, "--land"),
            "--base-ref, --integration-branch, --land and --checkout-dir need --repo",
        ),
        (
            ("--worktree", ".", "--integration-branch", "premath/x", "--land"),
            "--base-ref, --integration-branch, --land and --checkout-dir need --repo",
        ),
        (
            ("--worktree", ".", "--repo", "r", "--checkout-dir", "c"),
            "--checkout-dir: only with --executor ray",
        ),
        (
            ("--executor", "ray", "--mcp-url", "ftp://x"),
            "--mcp-url must be an http:// or https:// URL (got 'ftp://x')",
        ),
    ],
)
def test_each_executor_refuses_the_others_options(cli_run, args, message):
    out = cli_run("harness-loop", "coordinator", *args, "--json")
    assert (out.exit_code, out.json["error"]) == (2, {"code": "usage_error", "message": message})


def test_ray_loads_only_for_the_ray_executor_and_its_absence_names_the_extra(tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text("w " + "t" * 40 + "\n")
    tokens.chmod(0o600)
    fleet = ["harness-loop", "coordinator", "--executor", "ray", "--mcp-url", URL[1]]
    fleet += ["--token-file", str(tokens), "--repo", str(tmp_path), "--json"]
    code, _, stdout, _ = probe(fleet, tmp_path, hide_ray=True)
    assert code == 2
    import orjson

    error = orjson.loads(stdout)["error"]
    assert error["code"] == "usage_error"
    assert "pip install 'premath[ray]'" in error["message"]
    for argv in (["harness-loop", "coordinator", "--help"], ["harness-loop", "worker", "--help"]):
        assert probe(argv, tmp_path, hide_ray=False)[:2] == (0, False)


@pytest.mark.parametrize(
    "args",
    [
        ("--repo", "r"),
        ("--repo", "r", "--worktree-root", ".", "--checkout-dir", "c"),
    ],
)
def test_a_worker_on_the_issues_file_keeps_its_clone_in_its_worktree(cli_run, args):
    out = cli_run("harness-loop", "worker", "--worker-id", "w1", *args, "--json")
    assert (out.exit_code, out.json["error"]) == (
        2,
        {
            "code": "usage_error",
            "message": "--repo on the issues file needs --worktree-root FOLDER, the worker's own "
            "folder: its clone of --repo goes in FOLDER/repo, the merge queue's checkout in "
            "FOLDER/integration (--checkout-dir is for workers with --mcp-url)",
        },
    )


def test_a_worker_presents_its_own_line_else_the_line_its_id_falls_under_else_the_first():
    from premath.cli._remote import pick_token

    lines = [("coordinator", "c"), ("fleet", "f"), ("fleet.2", "f2"), ("fleet.2x", "x")]
    assert pick_token(lines, "fleet.2") == "f2"
    assert pick_token(lines, "fleet.1") == "f"  # the token that may act as it
    assert pick_token(lines, "fleet.2.a") == "f2"  # the longest owner
    assert pick_token(lines, "w9") == "c"
    assert pick_token(lines, "fleetx") == "c"
