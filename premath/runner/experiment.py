"""Read `experiment.yaml`, naming every wrong field at once, and resolve it for a run.

Validation has two layers whose problems are reported together: the pydantic model (types,
unknown keys, ranges) and the checks that span fields (variant ids unique and distinct from the
baseline, images allowed by the executor). The resolved experiment is the fully defaulted JSON
document a run stores and digests; a resume reads it back instead of the YAML.
"""

from __future__ import annotations

import hashlib
import os
import shlex
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from premath.errors import InputInvalid
from premath.store.canonical import digest_input
from premath.store.files import ReadCap, read_input_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pydantic import ValidationError

    from premath.models.experiment import ExperimentSpec
    from premath.models.trial import ExecutorName

EXPERIMENT_CAP = ReadCap("PREMATH_MAX_EXPERIMENT_BYTES", 1024 * 1024)
_DIGEST_PREFIX = "exp1_"


@dataclass(frozen=True, slots=True)
class VariantPlan:
    """One arm of the experiment as the executors apply it."""

    variant_id: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    image: str | None
    is_baseline: bool


@dataclass(frozen=True, slots=True)
class LoadedExperiment:
    spec: ExperimentSpec
    source: Path
    """The experiment file (absolute)."""

    @property
    def base_dir(self) -> Path:
        """The experiment file's folder: dataset paths and the local harness's cwd."""
        return self.source.parent

    @property
    def dataset_path(self) -> Path:
        return self.base_dir / self.spec.dataset.path


def experiment_digest(resolved: dict[str, Any]) -> str:
    """`exp1_<sha256 hex>` of the resolved experiment's canonical JSON (sorted keys), without
    its `source` paths: the same experiment digests the same wherever it is checked out."""
    content = {key: value for key, value in resolved.items() if key != "source"}
    return _DIGEST_PREFIX + hashlib.sha256(digest_input(content)).hexdigest()


def command_argv(command: list[str] | str) -> list[str]:
    """The runtime command as argv: arrays as given, a string split once as a shell would."""
    if isinstance(command, list):
        return list(command)
    try:
        return shlex.split(command)
    except ValueError as exc:
        raise InputInvalid(f"runtime.command: cannot split {command!r}: {exc}") from exc


def variant_plans(spec: ExperimentSpec) -> list[VariantPlan]:
    """The baseline first, then the plan's variants in file order."""
    base = spec.baseline
    plans = [
        VariantPlan(base.variant_id, tuple(base.args), tuple(base.env.items()), base.image, True)
    ]
    plans.extend(
        VariantPlan(v.variant_id, tuple(v.args), tuple(v.env.items()), v.image, False)
        for v in spec.variant_plan
    )
    return plans


def _location(loc: Iterable[int | str]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def _pydantic_problems(error: ValidationError) -> list[str]:
    problems = []
    for item in error.errors(include_url=False):
        where = _location(item["loc"])
        kind = item["type"]
        if kind == "extra_forbidden":
            problems.append(f"{where}: unknown field")
        elif kind == "missing":
            problems.append(f"{where}: required field missing")
        else:
            message = item["msg"].removeprefix("Value error, ")
            if kind == "string_type":
                message += ' (quote numbers and flags in YAML, e.g. "0.9")'
            problems.append(f"{where}: {message}")
    return problems


def is_text(value: str) -> bool:
    """False for strings that cannot be UTF-8 (lone surrogates, from YAML `\\uD800` escapes or
    undecodable command-line bytes): no file of ours can hold them."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _non_text(value: Any, where: str) -> Iterator[str]:
    if isinstance(value, str):
        if not is_text(value):
            yield f"{where or '(top level)'}: not valid text (an unpaired \\uD800-\\uDFFF escape)"
    elif isinstance(value, dict):
        for key, item in value.items():
            name = f"{where}.{key}" if where else str(key)
            if isinstance(key, str) and not is_text(key):
                yield f"{where or '(top level)'}: a key is not valid text"
                continue
            yield from _non_text(item, name)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _non_text(item, f"{where}[{index}]")


def _cross_field_problems(raw: dict[str, Any]) -> list[str]:
    """Checks that span fields, done on the raw mapping so they report with the model's errors."""
    problems = list(_non_text(raw, ""))
    baseline = raw.get("baseline")
    base_id = baseline.get("variant_id") if isinstance(baseline, dict) else None
    plan = raw.get("variant_plan")
    entries = plan if isinstance(plan, list) else []
    ids = [v.get("variant_id") for v in entries if isinstance(v, dict)]
    ids = [variant_id for variant_id in ids if isinstance(variant_id, str)]
    for variant_id, count in Counter(ids).items():
        if count > 1:
            problems.append(f"variant_plan: variant id {variant_id!r} appears {count} times")
    if isinstance(base_id, str) and base_id in ids:
        index = next(
            i
            for i, entry in enumerate(entries)
            if isinstance(entry, dict) and entry.get("variant_id") == base_id
        )
        problems.append(
            f"variant_plan[{index}].variant_id: {base_id!r} is the baseline's id; the baseline "
            "is declared once, under baseline"
        )
    return problems


def parse_experiment(data: bytes, source: Path) -> ExperimentSpec:
    """Validate YAML bytes; one InputInvalid lists every problem, each with its field path."""
    import yaml
    from pydantic import ValidationError

    from premath.models.experiment import ExperimentSpec
    from premath.runner.plain_yaml import PlainYamlError, load_plain_yaml

    try:
        raw = load_plain_yaml(data)
    except PlainYamlError as exc:
        raise InputInvalid(
            f"{source}: not valid YAML at line {exc.line}, column {exc.column}: {exc.problem}"
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputInvalid(f"{source}: not valid YAML{where}: {problem}") from None
    if not isinstance(raw, dict):
        raise InputInvalid(
            f"{source}: an experiment file is a YAML mapping (version, experiment, ...)"
        )
    problems = _cross_field_problems(raw)
    spec = None
    try:
        spec = ExperimentSpec.model_validate(raw)
    except ValidationError as exc:
        problems = _pydantic_problems(exc) + problems
    if problems or spec is None:
        listed = "\n  - ".join(problems)
        raise InputInvalid(f"{source} is invalid ({len(problems)} problem(s)):\n  - {listed}")
    return spec


def load_experiment(path: str | os.PathLike[str]) -> LoadedExperiment:
    source = Path(path).absolute()
    data = read_input_file(
        source,
        EXPERIMENT_CAP,
        named=path,
        what="experiment file",
        expected="the experiment.yaml file",
    )
    return LoadedExperiment(parse_experiment(data, source), source)


def experiment_images(spec: ExperimentSpec) -> list[str]:
    """Every image a docker run of the experiment starts (a variant's own, else the runtime's)."""
    images = {plan.image or spec.runtime.image for plan in variant_plans(spec)}
    return sorted(image for image in images if image is not None)


def executor_problems(spec: ExperimentSpec, executor: str) -> list[str]:
    """What the chosen executor cannot honour; images only make sense in containers."""
    problems = []
    images = [("runtime.image", spec.runtime.image), ("baseline.image", spec.baseline.image)]
    images += [(f"variant_plan[{i}].image", v.image) for i, v in enumerate(spec.variant_plan)]
    if executor == "local":
        problems += [
            f"{where}: the local executor runs the command on this machine and cannot use an "
            f"image ({image!r}); remove it or run with --executor docker"
            for where, image in images
            if image is not None
        ]
        if spec.runtime.user is not None:
            problems.append(
                f"runtime.user: the local executor cannot switch user ({spec.runtime.user!r}); "
                "remove it or run with --executor docker"
            )
    elif spec.runtime.image is None:
        missing = [plan.variant_id for plan in variant_plans(spec) if plan.image is None]
        if executor == "ray" and len(missing) == len(variant_plans(spec)):
            if spec.runtime.user is not None:
                problems.append(
                    f"runtime.user: only a container can switch user ({spec.runtime.user!r}); "
                    "name an image (runtime.image) or remove it"
                )
        elif missing:
            problems.append(
                f"runtime.image: required by the {executor} executor once any variant names an "
                f"image (variants without their own image: {', '.join(missing)})"
            )
    return problems


def uses_containers(spec: ExperimentSpec, executor: str) -> bool:
    """Docker runs every trial in a container; Ray does when the experiment names images."""
    return executor == "docker" or (executor == "ray" and bool(experiment_images(spec)))


def chosen_executor(spec: ExperimentSpec, flag: ExecutorName | None) -> ExecutorName:
    """`--executor`, else the file's `executor`, else local."""
    return flag or spec.executor or "local"


def check_executor(loaded: LoadedExperiment, executor: str) -> None:
    problems = executor_problems(loaded.spec, executor)
    if problems:
        listed = "\n  - ".join(problems)
        raise InputInvalid(f"{loaded.source} cannot run on the {executor} executor:\n  - {listed}")


def resolved_document(loaded: LoadedExperiment, executor: str) -> dict[str, Any]:
    """The experiment with every default filled in, plus where it came from."""
    document = loaded.spec.model_dump(mode="json")
    document["runtime"]["command"] = command_argv(loaded.spec.runtime.command)
    document["source"] = {
        "path": os.fspath(loaded.source),
        "base_dir": os.fspath(loaded.base_dir),
        "dataset_path": os.fspath(loaded.dataset_path),
    }
    document["executor"] = executor
    return document


def spec_from_resolved(document: dict[str, Any]) -> ExperimentSpec:
    from pydantic import ValidationError

    from premath.models.experiment import ExperimentSpec

    body = {k: v for k, v in document.items() if k not in ("source", "executor")}
    try:
        return ExperimentSpec.model_validate(body)
    except ValidationError as exc:
        listed = "\n  - ".join(_pydantic_problems(exc))
        raise InputInvalid(f"the run's resolved experiment is invalid:\n  - {listed}") from None


def validate_experiment(path: str, executor: ExecutorName | None) -> dict[str, Any]:
    """`experiment validate`: every check a run makes before it writes anything."""
    from premath.runner.dataset import load_tasks

    loaded = load_experiment(path)
    executor = chosen_executor(loaded.spec, executor)
    check_executor(loaded, executor)
    tasks = load_tasks(loaded.dataset_path, loaded.spec.dataset.limit)
    plans = variant_plans(loaded.spec)
    replications = loaded.spec.design.replications
    return {
        "action": "experiment.validate",
        "path": path,
        "experiment_id": loaded.spec.experiment.id,
        "executor": executor,
        "variants": [plan.variant_id for plan in plans],
        "tasks": len(tasks),
        "replications": replications,
        "trials": len(plans) * len(tasks) * replications,
        "digest": experiment_digest(resolved_document(loaded, executor)),
    }
