"""Fatal `scheme-eval` errors before any call runs: stderr, exit 1, nothing appended (§3.3)."""

from typing import Any

import orjson

from premath.errors import InputInvalid
from premath.store.documents import os_error_text


class StartupError(InputInvalid):
    """`<message> (<class>)`; no stdout, no trajectory row."""

    def __init__(self, message: str, failure_class: str | None = None) -> None:
        super().__init__(message if failure_class is None else f"{message} ({failure_class})")
        self.failure_class = failure_class


def read_json(path: str, label: str) -> Any:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise StartupError(f"failed to read {label} at {path}: {os_error_text(exc)}") from None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise StartupError(f"failed to parse {label} JSON at {path}: {exc}") from None
