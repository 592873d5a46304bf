"""experiment.yaml and tasks.jsonl validation: every problem named at once, with its path."""

from pathlib import Path

import pytest

from premath.errors import InputInvalid, NotFound
from premath.runner.dataset import load_tasks, task_id_of
from premath.runner.experiment import check_executor, command_argv, load_experiment

VALID = """\
version: "1.0"
experiment: {id: e1, name: Demo}
dataset: {path: tasks.jsonl}
design: {comparison: paired, replications: 2, seed: 3}
baseline: {variant_id: control}
variant_plan:
  - {variant_id: hot, args: [--temperature, "0.9"], env: {DEBUG: "1"}}
runtime:
  command: [python, harness.py]
"""


def write(folder: Path, text: str, tasks: str = '{"id": "a"}\n') -> Path:
    (folder / "tasks.jsonl").write_text(tasks)
    path = folder / "experiment.yaml"
    path.write_text(text)
    return path


def problems(folder: Path, text: str) -> str:
    with pytest.raises(InputInvalid) as caught:
        load_experiment(write(folder, text))
    return caught.value.message


def test_a_valid_file_gets_every_default(tmp_path):
    spec = load_experiment(write(tmp_path, VALID)).spec
    assert spec.design.scheduling == "paired_interleaved"
    assert (spec.runtime.timeout_ms, spec.runtime.network) == (300_000, "none")
    assert (spec.retry.max_attempts, spec.retry.retry_on, spec.concurrency) == (1, ["error"], 1)
    assert spec.variant_plan[0].args == ["--temperature", "0.9"]


def test_unknown_fields_and_type_errors_are_all_listed_with_their_paths(tmp_path):
    text = (
        VALID.replace("seed: 3", "seed: 3, shuffle_tasks: true")
        .replace("runtime:", "telemetry: {}\nruntime:")
        .replace('"0.9"', "0.9")
        .replace("replications: 2", "replications: 0")
    )
    message = problems(tmp_path, text)
    assert "(4 problem(s))" in message
    assert "design.shuffle_tasks: unknown field" in message
    assert "telemetry: unknown field" in message
    assert "variant_plan[0].args[1]: Input should be a valid string" in message
    assert "quote numbers and flags in YAML" in message
    assert "design.replications: Input should be greater than or equal to 1" in message


def test_missing_required_fields_are_named(tmp_path):
    message = problems(tmp_path, 'version: "1.0"\nexperiment: {id: x}\n')
    for where in ("experiment.name", "dataset", "design", "baseline", "runtime"):
        assert f"{where}: required field missing" in message


def test_malformed_yaml_says_where(tmp_path):
    message = problems(tmp_path, "version: '1.0'\nexperiment: [unclosed\n")
    assert "not valid YAML at line" in message


def test_yaml_tags_are_not_executed(tmp_path):
    message = problems(tmp_path, "!!python/object/apply:os.system ['echo hacked']\n")
    assert "not valid YAML" in message


def test_a_non_mapping_document_is_refused(tmp_path):
    assert "is a YAML mapping" in problems(tmp_path, "- just\n- a list\n")


def test_repeated_variant_ids_and_the_baseline_twice(tmp_path):
    text = VALID.replace(
        "variant_plan:\n",
        "variant_plan:\n  - {variant_id: control}\n  - {variant_id: hot}\n",
    )
    message = problems(tmp_path, text)
    assert "variant id 'hot' appears 2 times" in message
    assert "variant_plan[0].variant_id: 'control' is the baseline's id" in message


def test_reserved_env_names_are_refused(tmp_path):
    message = problems(tmp_path, VALID.replace("DEBUG", "AGENTLAB_TASK_PATH"))
    assert "reserved: the harness sees no runner metadata" in message
    message = problems(tmp_path, VALID.replace("DEBUG", "premath_x"))
    assert "reserved" in message


def test_version_must_be_1_0_but_an_unquoted_1_0_is_accepted(tmp_path):
    assert load_experiment(write(tmp_path, VALID.replace('"1.0"', "1.0"))).spec.version == "1.0"
    assert "version: Input should be '1.0'" in problems(tmp_path, VALID.replace('"1.0"', '"2.0"'))


def test_images_are_refused_on_the_local_executor_and_required_on_docker(tmp_path):
    loaded = load_experiment(
        write(tmp_path, VALID.replace("runtime:\n", "runtime:\n  image: h:1\n"))
    )
    with pytest.raises(InputInvalid, match=r"runtime.image: the local executor .* \('h:1'\)"):
        check_executor(loaded, "local")
    check_executor(loaded, "docker")
    plain = load_experiment(write(tmp_path, VALID))
    with pytest.raises(InputInvalid, match="required by the docker executor"):
        check_executor(plain, "docker")


def test_command_strings_are_split_like_a_shell():
    assert command_argv("python 'my harness.py' -u") == ["python", "my harness.py", "-u"]
    assert command_argv(["a b"]) == ["a b"]
    with pytest.raises(InputInvalid, match="cannot split"):
        command_argv("python 'unclosed")


def test_missing_experiment_file(tmp_path):
    with pytest.raises(NotFound, match="does not exist"):
        load_experiment(tmp_path / "nope.yaml")


def test_task_ids_come_from_the_id_field_or_a_stable_digest(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"id": "x"}\n\n{"id": 7}\n{"q": 1, "r": 2}\n{"r": 2, "q": 1, "s": 0}\n')
    tasks = load_tasks(path)
    assert [t.id for t in tasks[:2]] == ["x", "7"]
    assert tasks[2].id == task_id_of({"r": 2, "q": 1})  # key order does not matter
    assert tasks[2].id.startswith("task_")
    assert len(tasks[2].id) == 21
    assert tasks[2].payload == b'{"q": 1, "r": 2}'
    assert [t.index for t in tasks] == [0, 1, 2, 3]
    assert len(load_tasks(path, limit=2)) == 2


def test_bad_dataset_lines_are_listed_together(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"id": "a"}\nnot json\n[1]\n{"id": "a"}\n{"id": true}\n{"q": 1}\n{"q": 1}\n')
    with pytest.raises(InputInvalid) as caught:
        load_tasks(path)
    message = caught.value.message
    assert "has 5 bad line(s)" in message
    assert "line 2: not JSON" in message
    assert "line 3: a task must be a JSON object" in message
    assert "line 4: duplicate task id 'a' (first on line 1)" in message
    assert "line 5: `id` must be a non-blank string or an integer" in message
    assert "line 7: duplicate task id" in message
    assert "identical tasks without an id; add ids" in message


def test_missing_and_empty_datasets(tmp_path):
    with pytest.raises(NotFound, match="relative to the experiment file"):
        load_tasks(tmp_path / "absent.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n\n")
    with pytest.raises(InputInvalid, match="has no tasks"):
        load_tasks(tmp_path / "empty.jsonl")


def test_unpaired_surrogate_escapes_are_refused_before_anything_is_written(tmp_path):
    text = VALID.replace("args: [--temperature", 'args: ["\\uDC00", --temperature')
    message = problems(tmp_path, text)
    assert "variant_plan[0].args[0]: not valid text" in message
