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


def test_a_first_issue_in_a_git_subfolder_starts_the_store_at_the_git_root(workdir, cli_run):
    """No `.premath/` anywhere yet: the git root is the project root, not the subfolder."""
    (workdir / ".git").mkdir()
    deep = workdir / "src" / "deep"
    deep.mkdir(parents=True)
    os.chdir(deep)
    added = cli_run("issue", "add", "First", "--json")
    assert (added.exit_code, added.json["issuesPath"]) == (0, "../../.premath/issues.jsonl")
    assert (workdir / ".premath" / "issues.jsonl").is_file()
    assert not (deep / ".premath").exists()
    initialised = cli_run("init", "--json")  # the same root: the store is found, not remade
    assert initialised.exit_code == 0, initialised.stderr
    assert os.path.samefile(initialised.json["repoRoot"], workdir)


def test_experiments_run_report_and_resume_in_the_project_from_any_subfolder(project, cli_run):
    """The run folder is the project's; `report` and `resume` find it from another folder."""
    from tests.runner.conftest import make_experiment

    experiment = make_experiment(project / "examples" / "exp", [{"id": "t1"}, {"id": "t2"}])
    os.chdir(experiment.parent)
    ran = cli_run("experiment", "run", "experiment.yaml", "--run-id", "demo", "--json")
    assert ran.exit_code == 0, ran.stderr
    assert (project / ".premath" / "runs" / "demo" / "run.json").is_file()
    assert not (experiment.parent / ".premath").exists()
    os.chdir(project / "src" / "deep")
    report = cli_run("experiment", "report", "demo", "--json")
    assert (report.exit_code, report.json["run_id"]) == (0, "demo"), report.stderr
    resumed = cli_run("experiment", "resume", "demo", "--json")
    assert (resumed.exit_code, resumed.json["trials"]["ran"]) == (0, 0), resumed.stderr
    assert resumed.json["run_dir"] == "../../.premath/runs/demo"


@pytest.mark.parametrize(
    ("argv", "made"),
    [
        (
            ["run", "--command", "true", "task.json", "--json"],
            ".premath/runs",
        ),
        (
            ["scheme-eval", "--program", "program.json", "--json"],
            ".premath/harness_trajectory.jsonl",
        ),
        (
            ["transport-dispatch", "--action", "issue.claim_next", "--payload",
             '{"assignee": "w1"}', "--json"],
            ".premath/issues.jsonl",
        ),
        (
            ["issue", "migrate-events", "--json"],
            ".premath/memory/events.jsonl",
        ),
    ],
)  # fmt: skip
def test_every_command_writing_premath_state_writes_the_project_s(project, cli_run, argv, made):
    """The class: any default `.premath/...` path resolves under the project root."""
    deep = project / "src" / "deep"
    (deep / "task.json").write_text('{"id": "t"}')
    (deep / "program.json").write_text('{"calls": [{"action": "issue.ready", "args": {}}]}')
    before = (project / made).exists() and (project / made).stat().st_mtime_ns
    result = cli_run(*argv)
    assert result.exit_code in (0, 1), result.stderr  # `run` of `true` writes no result
    assert "error" not in (result.json or {}), result.stdout
    assert (project / made).exists()
    assert (project / made).stat().st_mtime_ns != before
    assert not (deep / ".premath").exists()


def test_every_default_premath_path_option_is_resolved_in_the_project():
    """Every option in the CLI whose default is a `.premath/...` path goes through the one
    root-discovery function: its own callback, or a `--repo-root` it is relative to whose
    default is the discovered root (no command resolves one against the working folder)."""
    from premath.cli._options import discovered_default
    from tests.support.cli import every_command

    unresolved = []
    for path, command in every_command():
        name = " ".join(("premath", *path))
        roots = [param for param in command.params if param.name == "repo_root"]
        discovered_root = bool(roots) and (
            not isinstance(roots[0].default, str) or roots[0].callback is discovered_default
        )
        unresolved += [
            f"{name} {param.opts[0]}"
            for param in command.params
            if isinstance(param.default, str)
            and param.default.startswith(".premath")
            and param.callback is not discovered_default
            and not discovered_root
        ]
    assert unresolved == []
