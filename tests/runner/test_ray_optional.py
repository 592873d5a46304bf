"""Ray is optional: importing premath never loads it, and without it `--executor ray` says
exactly what to install, before any run folder is written."""

import subprocess
import sys
from pathlib import Path

import orjson

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "clean_harness" / "experiment.yaml"

_PROBE = """
import sys
{hide}
import premath, premath.cli, premath.runner.runs, premath.runner.executors
import premath.runner.experiment, premath.runner.trial, premath.bench.run
from premath.cli import cli
try:
    cli.main({argv!r})
except SystemExit as exit:
    code = exit.code
print("RESULT", code, "ray" in sys.modules)
"""


def _probe(argv: list[str], cwd: Path, hide_ray: bool) -> tuple[int, bool, str, str]:
    hide = "sys.modules['ray'] = None  # as if not installed" if hide_ray else ""
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE.format(hide=hide, argv=argv)],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    *document, last = proc.stdout.strip().splitlines()
    _, code, loaded = last.split()
    return int(code), loaded == "True", "\n".join(document), proc.stderr


def test_importing_premath_and_running_locally_never_imports_ray(tmp_path):
    argv = ["experiment", "run", str(EXAMPLE), "--runs-dir", "runs", "--json"]
    code, loaded, _, stderr = _probe(argv, tmp_path, hide_ray=False)
    assert (code, loaded) == (0, False), stderr
    help_code, help_loaded, _, _ = _probe(["experiment", "run", "--help"], tmp_path, False)
    assert (help_code, help_loaded) == (0, False)


def test_without_ray_the_ray_executor_names_the_extra_and_writes_nothing(tmp_path):
    argv = ["experiment", "run", str(EXAMPLE), "--executor", "ray", "--runs-dir", "runs", "--json"]
    code, _, stdout, stderr = _probe(argv, tmp_path, hide_ray=True)
    assert code == 2
    error = orjson.loads(stdout)["error"]
    assert error["code"] == "usage_error"
    assert "pip install 'premath[ray]'" in error["message"]
    assert "pip install 'premath[ray]'" in stderr
    assert not (tmp_path / "runs").exists()


def test_the_file_names_the_executor_and_ray_checks_images(tmp_path):
    from tests.runner.conftest import make_experiment
    from tests.support.cli import invoke

    plain = make_experiment(tmp_path / "plain", [{"id": "t"}], executor="ray")
    checked = invoke("experiment", "validate", str(plain), "--json")
    assert (checked.exit_code, checked.json["executor"]) == (0, "ray")
    assert (
        invoke("experiment", "validate", str(plain), "--executor", "local", "--json").json[
            "executor"
        ]
        == "local"
    )  # the flag wins over the file
    mixed = make_experiment(
        tmp_path / "mixed",
        [{"id": "t"}],
        variants=[{"variant_id": "boxed", "image": "img:1"}],
        executor="ray",
    )
    refused = invoke("experiment", "validate", str(mixed), "--json")
    assert refused.exit_code == 1
    assert (
        "runtime.image: required by the ray executor once any variant names an image"
        in (refused.json["error"]["message"])
    )
