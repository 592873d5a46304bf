"""The fast path: the hot agent commands parsed without importing click.

Agents call `premath issue ready --json` and friends hundreds of times; importing click and
building its command tree costs more than the rest of such a call. For the commands in
`premath/data/cli-fast-path.json` (generated from their click declarations by
`cli/_fast_spec.py`, so click stays the one definition of every option), this module parses
the arguments itself and calls the command's body (`cli/hot/`) with exactly what click would
pass it. It only takes what it is sure of: `--help`, any error, a value it would have to
convert in a way it does not know, a repeated option, `--`, a table that no longer matches
the body: each answers None, and the caller runs click, whose messages and help stay the only
ones. Nothing is written before that decision.

`PREMATH_CLI_FAST_PATH=0` turns it off (tests compare both paths).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from premath.cli._exit import emit_reply, internal_error, interrupted, premath_error
from premath.cli._reply import AppContext, Reply, RerunWithClick
from premath.errors import PremathError
from premath.store import json_codec
from premath.store.json_codec import loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SPEC_FILE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "cli-fast-path.json")
SCHEMA = 1
USIZE_MAX = 2**64 - 1
_HELP = frozenset({"--help", "-h"})


class _NotSure(Exception):
    """The arguments need click (an error to word, or a form the table does not cover)."""


def _table() -> dict[str, Any] | None:
    try:
        with open(SPEC_FILE, "rb") as handle:
            spec = loads(handle.read())
    except (OSError, json_codec.JSONDecodeError):
        return None
    if not isinstance(spec, dict) or spec.get("schema") != SCHEMA:
        return None
    commands = spec.get("commands")
    return commands if isinstance(commands, dict) else None


def _integer(text: str, low: int | None, high: int | None) -> int:
    """click's INT / IntRange on the plain decimal forms; anything else goes to click."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not (digits.isascii() and digits.isdigit()):
        raise _NotSure
    value = int(text)
    if (low is not None and value < low) or (high is not None and value > high):
        raise _NotSure
    return value


def _converted(kind: list[Any], text: str) -> Any:
    name = kind[0]
    if name == "str":
        return text
    if name == "choice":
        if text not in kind[1]:
            raise _NotSure
        return text
    if name == "int":
        return _integer(text, kind[1], kind[2])
    if name == "usize":
        digits = text[1:] if text.startswith("+") else text
        if not (digits.isascii() and digits.isdigit()) or int(digits) > USIZE_MAX:
            raise _NotSure
        return int(digits)
    raise _NotSure  # a type only click converts


def parse(entry: dict[str, Any], args: list[str]) -> dict[str, Any]:
    """The keyword arguments click would pass the body for `args`; `_NotSure` otherwise."""
    params: list[dict[str, Any]] = entry["params"]
    by_opt = {opt: param for param in params for opt in param["opts"]}
    positional = [param for param in params if not param["opts"]]
    given: dict[int, list[Any]] = {}
    words: list[str] = []
    index = 0
    while index < len(args):
        token = args[index]
        index += 1
        if token in _HELP or token == "--":
            raise _NotSure
        if not token.startswith("-") or token == "-":
            if token == "-":
                raise _NotSure
            words.append(token)
            continue
        name, has_equals, attached = token.partition("=")
        param = by_opt.get(name if token.startswith("--") else token)
        if param is None:
            raise _NotSure
        if param["type"] == ["flag"]:
            if has_equals:
                raise _NotSure
            value: Any = True
        else:
            if has_equals:
                text = attached
            elif index < len(args) and args[index] not in _HELP:
                text = args[index]  # whatever it is, as click takes it
                index += 1
            else:
                raise _NotSure
            value = _converted(param["type"], text)
        values = given.setdefault(id(param), [])
        if values and not param["multiple"]:
            raise _NotSure  # StrictCommand refuses a repeat: click words it
        values.append(value)
    if len(words) != len(positional):
        raise _NotSure
    for param, word in zip(positional, words, strict=True):
        given[id(param)] = [_converted(param["type"], word)]
    kwargs: dict[str, Any] = {}
    for param in params:
        taken = given.get(id(param))
        if taken is None and param["required"]:
            raise _NotSure
        if param["name"] is None:
            continue
        if taken is None:
            value = param["absent"]
            if param["multiple"]:
                value = tuple(value or ())
            elif param["rebase"] and value is not None:
                from premath.store.root import rebase

                value = rebase(value)
        else:
            value = tuple(taken) if param["multiple"] else taken[0]
        kwargs[param["name"]] = value
    return kwargs


def _body(entry: dict[str, Any]) -> Callable[..., Reply] | None:
    """The command's body, if its signature is still the one the table was made from."""
    import importlib

    module_name, _, attribute = entry["body"].partition(":")
    body: Callable[..., Reply] = getattr(importlib.import_module(module_name), attribute)
    code = body.__code__
    names = list(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])
    if code.co_flags & 0x08:  # CO_VARKEYWORDS
        names.append("**")
    return body if names == entry["signature"] else None


def run_fast(argv: list[str]) -> int | None:
    """Run a hot command without click and return its exit code; None: run click instead."""
    if os.environ.get("PREMATH_CLI_FAST_PATH") == "0" or not argv or argv[0].startswith("-"):
        return None
    table = _table()
    if table is None:
        return None
    words = 2 if len(argv) > 1 and f"{argv[0]} {argv[1]}" in table else 1
    entry = table.get(" ".join(argv[:words]))
    if entry is None:
        return None
    json_mode = "--json" in argv
    try:
        kwargs = parse(entry, argv[words:])
        body = _body(entry)
        if body is None:
            return None
        return _run(body, entry["app"], kwargs, json_mode)
    except _NotSure:
        return None
    except PremathError as exc:  # a default path under a bad PREMATH_DIR, as click reports it
        return premath_error(exc, json_mode)


def _run(
    body: Callable[..., Reply], app: bool, kwargs: dict[str, Any], json_mode: bool
) -> int | None:
    """The body under the exit point's rules (`_root.run_command`, without click)."""
    from premath.runner.interrupts import sigterm_as_ctrl_c

    try:
        with sigterm_as_ctrl_c():
            reply = body(AppContext(), **kwargs) if app else body(**kwargs)
        return emit_reply(reply, json_mode)
    except RerunWithClick:
        return None
    except (KeyboardInterrupt, EOFError):
        sys.stderr.write("\n")  # as click's main does before its Abort
        return interrupted(json_mode)
    except PremathError as exc:
        return premath_error(exc, json_mode)
    except BrokenPipeError:
        return 1
    except Exception as exc:  # noqa: BLE001 - the exit point's rule: anything else is internal
        return internal_error(exc, json_mode)
