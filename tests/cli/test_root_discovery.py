"""Commands in a subfolder use the project's `.premath/` (divergence D16-4)."""

import os

import pytest


@pytest.fixture
def project(workdir, cli_run):
    """A git project with one issue; the test then runs from `<project>/src/deep`."""
    (workdir / ".git").mkdir()
    assert cli_run("issue", "add", "Root issue").exit_code == 0
    deep = workdir / "src" / "deep"
    deep.mkdir(parents=True)
    os.chdir(deep)
    return workdir


def test_a_subfolder_uses_the_project_store(project, cli_run):
    listed = cli_run("issue", "list", "--json")
    assert (listed.exit_code, listed.json["count"]) == (0, 1)
    assert listed.json["issuesPath"] == "../../.premath/issues.jsonl"
    appended = cli_run(
        "harness-trajectory",
        "append",
        "--step-id",
        "s1",
        "--action",
        "a",
        "--result-class",
        "completed",
        "--json",
    )
    assert appended.exit_code == 0, appended.stderr
    assert (project / ".premath" / "harness_trajectory.jsonl").is_file()
    assert not (project / "src" / "deep" / ".premath").exists()


def test_at_the_root_paths_stay_the_reference_s(project, cli_run):
    os.chdir(project)
    assert cli_run("issue", "list", "--json").json["issuesPath"] == ".premath/issues.jsonl"


def test_an_explicit_path_wins(project, cli_run):
    added = cli_run("issue", "add", "Local", "--issues", "local.jsonl", "--json")
    assert (added.exit_code, added.json["issuesPath"]) == (0, "local.jsonl")
    assert (project / "src" / "deep" / "local.jsonl").is_file()


def test_the_walk_stops_at_the_git_root(workdir, cli_run):
    assert cli_run("issue", "add", "Outer").exit_code == 0
    inner = workdir / "inner"
    (inner / ".git").mkdir(parents=True)
    os.chdir(inner)
    result = cli_run("issue", "list", "--json")  # this repository has no store of its own
    assert result.exit_code == 1
    assert "../.premath" not in result.json["error"]["message"]
    added = cli_run("issue", "add", "Inner", "--json")
    assert (added.exit_code, added.json["issuesPath"]) == (0, ".premath/issues.jsonl")
    assert (inner / ".premath" / "issues.jsonl").is_file()


def test_premath_dir_overrides_the_walk(project, cli_run, monkeypatch, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / ".premath").mkdir()
    monkeypatch.setenv("PREMATH_DIR", str(elsewhere / ".premath"))
    added = cli_run("issue", "add", "Elsewhere", "--json")
    assert added.exit_code == 0, added.stderr
    assert (elsewhere / ".premath" / "issues.jsonl").is_file()
    assert os.path.samefile(os.path.dirname(added.json["issuesPath"]), elsewhere / ".premath")


def test_premath_dir_that_is_not_a_folder_is_a_usage_error(project, cli_run, monkeypatch):
    monkeypatch.setenv("PREMATH_DIR", str(project / "missing" / ".premath"))
    result = cli_run("issue", "list", "--json")
    assert (result.exit_code, result.json["error"]["code"]) == (2, "usage_error")
    assert "PREMATH_DIR=" in result.json["error"]["message"]


def test_a_premath_file_is_refused(workdir, cli_run):
    (workdir / ".git").mkdir()
    (workdir / ".premath").write_text("not a folder")
    result = cli_run("issue", "list", "--json")
    assert (result.exit_code, result.json["error"]["code"]) == (2, "usage_error")
    assert "is not a folder" in result.json["error"]["message"]
    assert (workdir / ".premath").read_text() == "not a folder"


def test_the_loop_in_a_subfolder_works_on_the_project(project, cli_run):
    result = cli_run(
        "harness",
        "step",
        "--worker-id",
        "me",
        "--work-cmd",
        "true",
        "--verify-cmd",
        "true",
        "--json",
    )
    assert result.exit_code == 0, result.stderr
    assert result.json["issueId"] == "bd-1"
    assert (project / ".premath" / "harness_session.json").is_file()
    assert not (project / "src" / "deep" / ".premath").exists()


def test_outside_a_git_work_tree_the_walk_goes_on(workdir, cli_run):
    assert cli_run("issue", "add", "Project").exit_code == 0
    deep = workdir / "src" / "deep"
    deep.mkdir(parents=True)
    os.chdir(deep)
    listed = cli_run("issue", "list", "--json")
    assert (listed.exit_code, listed.json["issuesPath"]) == (0, "../../.premath/issues.jsonl")


def test_a_scratch_folder_in_the_temp_folder_is_a_project_of_its_own(workdir, cli_run, monkeypatch):
    """A stray store in the temp folder (or above it) never captures the scratch folders made
    there: a conformance runner's, a test's."""
    temp = workdir / "tmp"
    scratch = temp / "premath-cli-x"
    scratch.mkdir(parents=True)
    for stray in (temp, workdir):
        os.chdir(stray)
        assert cli_run("issue", "add", "Stray").exit_code == 0
    monkeypatch.setenv("TMPDIR", str(temp))
    os.chdir(scratch)
    added = cli_run("issue", "add", "Here", "--json")
    assert (added.exit_code, added.json["issuesPath"]) == (0, ".premath/issues.jsonl")
    assert (scratch / ".premath" / "issues.jsonl").is_file()
    for stray in (workdir, temp):
        assert len((stray / ".premath" / "issues.jsonl").read_bytes().splitlines()) == 1


def test_a_premath_file_above_is_refused(project, cli_run):
    (project / ".premath").rename(project / "moved")
    (project / ".premath").write_text("not a folder")
    result = cli_run("issue", "list", "--json")
    assert (result.exit_code, result.json["error"]["code"]) == (2, "usage_error")
    assert "is not a folder" in result.json["error"]["message"]
