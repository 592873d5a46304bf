"""Judge ATIF files the way Harbor 0.26.0's `trajectory_validator` does, naming each location.

Verdicts agree with Harbor on every fixture of the conformance corpus (tests/atif); messages
follow Harbor's wording, but each error carries a clean JSON location (`steps[2].tool_calls[0]`,
0-based) instead of pydantic's union-tagged path (specs/atif.md "Validation"). The file is read
with the stdlib `json` module because Harbor reads it that way (NaN accepted, last duplicate key
wins); media paths resolve against the file's folder, as Harbor's media check does.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from premath.errors import InputInvalid
from premath.models.bench import AtifError
from premath.store.files import read_bounded

# Tags pydantic puts into an error location for the alternatives of a union; not JSON keys.
_UNION_TAGS = frozenset({"str", "float", "int", "bool", "ImageSource", "AudioSource"})
_MESSAGE_PREFIX = "Value error, "


@dataclass(frozen=True, slots=True)
class ValidationReport:
    path: str
    errors: tuple[AtifError, ...]

    @property
    def valid(self) -> bool:
        return not self.errors

    def document(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "valid": self.valid,
            "errors": [error.model_dump() for error in self.errors],
        }


def _join(base: str, relative: str) -> str:
    if not base or not relative:
        return base or relative
    return base + relative if relative.startswith("[") else f"{base}.{relative}"


def _location(loc: tuple[int | str, ...]) -> str:
    text = ""
    for item in loc:
        if isinstance(item, int):
            text += f"[{item}]"
        elif item not in _UNION_TAGS and "[" not in item and "(" not in item:
            text = _join(text, item)
    return text


def _message(error: Any) -> str:
    kind, message, given = error["type"], error["msg"], error.get("input")
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return "unexpected field (not part of ATIF schema)"
    if kind in ("string_type", "int_type", "float_type", "dict_type", "list_type") and (
        given is not None
    ):
        return f"expected {kind.replace('_', ' ')}, got {type(given).__name__}"
    if kind == "literal_error" and given is not None:
        return f"{message}, got {given!r}"
    return str(message).removeprefix(_MESSAGE_PREFIX)


def _is_shadowed_alternative(error: Any) -> bool:
    """The `str` alternative of a `str | list[ContentPart]` given a list: the list one says why."""
    return "str" in error["loc"] and isinstance(error.get("input"), list)


def schema_errors(document: Any) -> list[AtifError]:
    """Errors of the ATIF models (fields, then document rules), as Harbor collects them."""
    from pydantic import ValidationError

    from premath.models.atif import Trajectory

    if not isinstance(document, dict):
        return [AtifError(location="", message="Trajectory must be a JSON object/dict")]
    try:
        Trajectory.model_validate(document)
    except ValidationError as exc:
        errors: list[AtifError] = []
        for error in exc.errors(include_url=False):
            if _is_shadowed_alternative(error):
                continue
            location = _location(error["loc"])
            relative = (error.get("ctx") or {}).get("atif_location")
            if relative is not None:
                location = _join(location, relative)
            found = AtifError(location=location, message=_message(error))
            if found not in errors:
                errors.append(found)
        return errors
    return []


def _missing_media(content: Any, location: str, base_dir: Path) -> list[AtifError]:
    errors = []
    for index, part in enumerate(content if isinstance(content, list) else ()):
        if not isinstance(part, dict) or part.get("type") not in ("image", "audio"):
            continue
        source = part.get("source")
        media_path = source.get("path") if isinstance(source, dict) else None
        if not isinstance(media_path, str) or not media_path or "://" in media_path:
            continue
        if not (base_dir / media_path).exists():
            errors.append(
                AtifError(
                    location=f"{location}[{index}].source.path",
                    message=f"referenced {part['type']} file does not exist: {media_path}",
                )
            )
    return errors


def media_errors(document: Any, base_dir: Path) -> list[AtifError]:
    """Local image/audio files named by the top-level steps that do not exist (URLs skipped)."""
    steps = document.get("steps") if isinstance(document, dict) else None
    errors: list[AtifError] = []
    for step_index, step in enumerate(steps if isinstance(steps, list) else ()):
        if not isinstance(step, dict):
            continue
        errors += _missing_media(step.get("message"), f"steps[{step_index}].message", base_dir)
        observation = step.get("observation")
        results = observation.get("results") if isinstance(observation, dict) else None
        for result_index, result in enumerate(results if isinstance(results, list) else ()):
            if isinstance(result, dict):
                location = f"steps[{step_index}].observation.results[{result_index}].content"
                errors += _missing_media(result.get("content"), location, base_dir)
    return errors


def parse_trajectory_bytes(raw: bytes) -> tuple[Any, AtifError | None]:
    """The JSON value of a trajectory file, or the error that makes it unreadable."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, AtifError(location="", message=f"Invalid JSON: not UTF-8 (byte {exc.start})")
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, AtifError(location="", message=f"Invalid JSON: {exc}")
    except RecursionError:
        return None, AtifError(location="", message="Invalid JSON: nested too deeply")
    except ValueError as exc:  # an integer of more digits than Python converts (4,300)
        return None, AtifError(location="", message=f"Invalid JSON: {exc}")


def validate_document(document: Any, *, base_dir: Path | None) -> list[AtifError]:
    """Schema and rule errors, then missing media files when `base_dir` is given."""
    errors = schema_errors(document)
    if base_dir is not None and isinstance(document, dict):
        errors += media_errors(document, base_dir)
    return errors


def validate_file(path: str | os.PathLike[str], *, check_media: bool = True) -> ValidationReport:
    """Validate one trajectory file; an unreadable file is an invalid report, never an exception."""
    target = Path(path)
    shown = os.fspath(path)
    try:
        raw = read_bounded(target)
    except InputInvalid as exc:
        return ValidationReport(shown, (AtifError(location="", message=exc.message),))
    except FileNotFoundError:
        return ValidationReport(
            shown, (AtifError(location="", message=f"file not found: {shown}"),)
        )
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return ValidationReport(
            shown, (AtifError(location="", message=f"cannot read {shown}: {reason}"),)
        )
    document, unreadable = parse_trajectory_bytes(raw)
    if unreadable is not None:
        return ValidationReport(shown, (unreadable,))
    base_dir = target.parent if check_media else None
    return ValidationReport(shown, tuple(validate_document(document, base_dir=base_dir)))


RUN_TRAJECTORY = os.path.join("atif", "trajectory.json")
"""Where a bench run folder keeps its trajectory (`premath.bench.paths`)."""


def _validate_path(path: str, check_media: bool) -> ValidationReport:
    """A file; or a bench run folder, standing for its `atif/trajectory.json` (as `atif export`
    takes the folder)."""
    if not os.path.isdir(path):
        return validate_file(path, check_media=check_media)
    inside = os.path.join(path, RUN_TRAJECTORY)
    if not os.path.isfile(inside):
        message = (
            f"{path} is a folder without {RUN_TRAJECTORY}: give a trajectory file or a bench "
            "run folder"
        )
        return ValidationReport(path, (AtifError(location="", message=message),))
    return validate_file(inside, check_media=check_media)


def validate_files(paths: Iterable[str], *, check_media: bool = True) -> dict[str, Any]:
    """`atif validate`: one report per file (or run folder), valid only when every one is."""
    reports = [_validate_path(path, check_media).document() for path in paths]
    return {"valid": all(report["valid"] for report in reports), "files": reports}
