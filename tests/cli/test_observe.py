"""`premath observe-build` and `premath observe`: our divergences (D21-1, D21-2, D21-3, D21-13)
and what the corpus does not pin (root discovery, FIFOs, huge files)."""

import os
from pathlib import Path

import orjson
import pytest

from tests.support.observation import TYPED, seed_project

SURFACE = Path("artifacts/observation/latest.json")
EVENTS = Path("artifacts/observation/events.jsonl")


pytestmark = pytest.mark.timeout(60)


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every path under `root` with the bytes of its regular files (others as None)."""
    found: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        found[str(path.relative_to(root))] = path.read_bytes() if path.is_file() else None
    return found


@pytest.fixture
def built(cli_run, workdir):
    seed_project(workdir)
    assert cli_run("observe-build").exit_code == 0
    return workdir


def test_the_surface_and_events_it_writes(cli_run, built):
    out = cli_run("observe-build", "--json")
    surface = orjson.loads((built / SURFACE).read_bytes())
    assert out.exit_code == 0
    assert out.stdout.encode() == (built / SURFACE).read_bytes()
    assert list(surface) == ["schema", "surfaceKind", "summary", "latest", "instructions"]
    summary = surface["summary"]
    assert (summary["state"], summary["needsAttention"], summary["topFailureClass"]) == (
        "accepted",
        False,
        "verified_accept",
    )
    assert summary["latestProjectionDigest"] == TYPED
    assert summary["coherence"]["issuePartition"]["readyIssueIds"] == ["bd-1"]
    assert summary["coherence"]["issuePartition"]["blockedIssueIds"] == ["bd-2"]
    kinds = [orjson.loads(line)["kind"] for line in (built / EVENTS).read_bytes().splitlines()]
    assert kinds == [
        "ci.delta.v1.summary",
        "ci.required.v1.summary",
        "ci.required.decision.v1.summary",
        "ci.instruction.v1.summary",
        "ci.instruction.v1.summary",
        "ci.observation.surface.v0.summary",
        "ci.observation.surface.v0.coherence",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--out-jsonl", "blocker/events.jsonl"),
            "failed to write observation events ",
        ),
        (("--out-json", "a-dir"), "failed to write observation surface "),
        (("--out-jsonl", "  "), "failed to write observation events "),
    ],
)
def test_d21_1_a_failed_write_leaves_both_files_as_they_were(cli_run, built, args, message):
    (built / "blocker").write_text("a regular file\n")
    (built / "a-dir").mkdir()
    (built / ".premath" / "issues.jsonl").write_text("")  # the next surface would differ
    before = _tree(built)
    out = cli_run("observe-build", *args)
    assert (out.exit_code, out.stdout) == (1, "")
    assert out.stderr.startswith(f"error: {message}")
    assert "(nothing was changed)" in out.stderr
    assert _tree(built) == before  # no new folder, no temp file, old surface and events


def test_d21_1_a_write_failing_midway_changes_nothing(cli_run, built, monkeypatch):
    from premath.store import atomic

    staged = atomic.stage_file
    calls = []

    def second_fails(target, data, **options):
        calls.append(target)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return staged(target, data, **options)

    monkeypatch.setattr(atomic, "stage_file", second_fails)
    (built / ".premath" / "issues.jsonl").write_text("")
    before = _tree(built)
    out = cli_run("observe-build", "--json")
    assert out.exit_code == 1
    assert out.json["error"] == {
        "code": "io_error",
        "message": f"failed to write observation events {built}/./{EVENTS}: No space left on "
        "device (os error 28) (nothing was changed)",
    }
    assert _tree(built) == before


def test_d21_2_one_path_for_surface_and_events_is_refused(cli_run, built):
    before = _tree(built)
    out = cli_run("observe-build", "--out-json", "x/both.json", "--out-jsonl", "x/../x/both.json")
    assert out.exit_code == 1
    assert "--out-json and --out-jsonl name the same file" in out.stderr
    assert _tree(built) == before


def test_d21_3_build_errors_name_the_witness_at_fault(cli_run, built):
    folder = built / "artifacts" / "ciwitness"
    (folder / "20260222T030000Z-torn.json").write_text('{"witnessKind": "ci.instr')
    out = cli_run("observe-build")
    assert out.exit_code == 1
    assert out.stderr.startswith("error: failed to build observation surface (repoRoot=")
    assert f"failed to parse {built}/./artifacts/ciwitness/20260222T030000Z-torn.json as JSON" in (
        out.stderr
    )
    (folder / "20260222T030000Z-torn.json").unlink()
    (folder / "20260222T030000Z-dir.json").mkdir()
    out = cli_run("observe-build")
    assert "20260222T030000Z-dir.json: Is a directory (os error 21)" in out.stderr


def test_d21_3_a_fifo_witness_is_refused_at_once(cli_run, built):
    os.mkfifo(built / "artifacts" / "ciwitness" / "20260222T030000Z-fifo.json")
    before = _tree(built)
    out = cli_run("observe-build")
    assert out.exit_code == 1
    assert "20260222T030000Z-fifo.json is not a regular file (a FIFO)" in out.stderr
    assert _tree(built) == before


def test_d21_3_a_huge_witness_is_refused(cli_run, built, monkeypatch):
    monkeypatch.setenv("PREMATH_MAX_DOCUMENT_BYTES", "4096")
    big = {"witnessKind": "ci.instruction.v1", "pad": "x" * 8192}
    (built / "artifacts" / "ciwitness" / "20260222T030000Z-big.json").write_bytes(orjson.dumps(big))
    out = cli_run("observe-build")
    assert out.exit_code == 1
    assert "20260222T030000Z-big.json is larger than 4096 bytes" in out.stderr


def test_a_broken_issue_row_is_named_and_nothing_changes(cli_run, built):
    (built / ".premath" / "issues.jsonl").write_text('{"id": "bd-1"}\n{"title": "no id"}\n')
    before = _tree(built)
    out = cli_run("observe-build")
    assert out.exit_code == 1
    assert out.stderr.endswith(
        f"invalid observation surface: missing issue id at {built}/./.premath/issues.jsonl:2\n"
    )
    assert _tree(built) == before


def test_observe_build_in_a_subfolder_builds_the_project_root(cli_run, built, monkeypatch):
    (built / SURFACE).unlink()
    (built / "src" / "deep").mkdir(parents=True)
    monkeypatch.chdir(built / "src" / "deep")
    out = cli_run("observe-build")
    assert out.exit_code == 0
    assert out.stdout.endswith(f"out={built}/src/deep/../.././{SURFACE})\n")
    assert (built / SURFACE).is_file()
    assert cli_run("observe", "--json").json["summary"]["state"] == "accepted"


def test_d21_13_a_surface_written_as_an_array_is_refused(cli_run, workdir):
    (workdir / "array.json").write_bytes(orjson.dumps([1, "ci.observation.surface.v0"]))
    out = cli_run("observe", "--surface", "array.json", "--json")
    assert out.exit_code == 1
    assert out.json["error"]["message"] == (
        "failed to load observation surface at array.json: failed to parse observation surface "
        "JSON: invalid type: sequence, expected struct ObservationSurface at $"
    )


def test_observe_answers_every_mode_from_the_built_surface(cli_run, built):
    needs = cli_run("observe", "--mode", "needs_attention", "--json").json
    assert list(needs) == [
        "needsAttention",
        "state",
        "topFailureClass",
        "latestProjectionDigest",
        "latestInstructionId",
        "coherence",
    ]
    row = cli_run(
        "observe", "--mode", "instruction", "--instruction-id", "20260222T020000Z-bootstrap"
    )
    assert row.stdout == (
        "premath observe instruction 20260222T020000Z-bootstrap\n"
        "  verdict: accepted\n"
        "  required checks: test\n"
        "  executed checks: test\n"
    )
    projection = cli_run("observe", "--mode", "projection", "--projection-digest", TYPED)
    assert projection.stdout.splitlines()[1:] == [
        "  match mode: typed",
        "  required witness: yes",
        "  delta snapshot: yes",
        "  decision: yes",
    ]
    missing = cli_run("observe", "--mode", "projection", "--projection-digest", "x", "--json")
    assert (missing.exit_code, missing.json["error"]["code"]) == (1, "not_found")
