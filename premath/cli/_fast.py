"""The fast path: the hot agent commands parsed without importing click.

Agents call `premath issue ready --json` and friends hundreds of times; importing click and
building its command tree costs more than the rest of such a call. A command declared `hot`
(`cli/_declaration.py`: its parameters are plain data beside its body, in `cli/hot/`) is parsed
here from that declaration, the same one `cli/_options.click_command` builds its click command
from, and its body is called with exactly what click would pass it. The fast path only takes
what it is sure of: `--help`, any error, a value it would have to convert in a way it does
not know, a repeated option, `--`: each answers None, and the caller runs click, whose
messages and help stay the only ones. Nothing is written before that decision.

`PREMATH_CLI_FAST_PATH=0` turns it off (tests compare both paths).
"""

from __future__ import annotations

import importlib
import os
import sys

from premath.cli._declaration import CHOICE, FLAG, INT, PRIORITY, STR, USIZE, CliCommand, CliParam
from premath.cli._exit import emit_reply, internal_error, interrupted, premath_error
from premath.cli._reply import AppContext, LazyGroup, RerunWithClick
from premath.errors import PremathError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

USIZE_MAX = 2**64 - 1
I32 = (-(2**31), 2**31 - 1)
_HELP = frozenset({"--help", "-h"})


class _NotSure(Exception):
    """The arguments need click (an error to word, or a form the fast path does not take)."""


def _integer(text: str, low: int | None, high: int | None) -> int:
    """click's INT / IntRange on the plain decimal forms; anything else goes to click."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not (digits.isascii() and digits.isdigit()):
        raise _NotSure
    value = int(text)
    if (low is not None and value < low) or (high is not None and value > high):
        raise _NotSure
    return value


def _converted(param: CliParam, text: str) -> Any:
    kind = param.kind
    if kind == STR:
        return text
    if kind == CHOICE:
        if text not in param.choices:
            raise _NotSure
        return text
    if kind == INT:
        return _integer(text, param.low, param.high)
    if kind == PRIORITY:  # its plain decimal forms are the i32 range's; the rest click words
        return _integer(text, *I32)
    if kind == USIZE:
        digits = text[1:] if text.startswith("+") else text
        if not (digits.isascii() and digits.isdigit()) or int(digits) > USIZE_MAX:
            raise _NotSure
        return int(digits)
    raise _NotSure  # a kind only click converts


def parse(declared: CliCommand, args: list[str]) -> dict[str, Any]:
    """The keyword arguments click would pass the body for `args`; `_NotSure` otherwise."""
    params = declared.params
    by_opt = {opt: param for param in params for opt in param.opts}
    positional = [param for param in params if not param.opts]
    given: dict[str, list[Any]] = {}
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
        if param.kind == FLAG:
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
            value = _converted(param, text)
        values = given.setdefault(param.name, [])
        if values and not param.multiple:
            raise _NotSure  # StrictCommand refuses a repeat: click words it
        values.append(value)
    if len(words) != len(positional):
        raise _NotSure
    for param, word in zip(positional, words, strict=True):
        given[param.name] = [_converted(param, word)]
    kwargs: dict[str, Any] = {}
    for param in params:
        taken = given.get(param.name)
        if taken is None and param.required:
            raise _NotSure
        if not param.expose:
            continue
        if taken is None:
            value = param.absent()
            if param.project_default and value is not None:
                from premath.store.root import rebase

                value = rebase(value)
        else:
            value = tuple(taken) if param.multiple else taken[0]
        kwargs[param.name] = value
    return kwargs


def declared_command(argv: list[str], groups: dict[str, LazyGroup]) -> CliCommand | None:
    """The declaration `argv` starts with, from its group's declarations modules, if any."""
    group = groups.get(argv[0])
    for name in () if group is None else group.declarations:
        for value in vars(importlib.import_module(name)).values():
            if type(value) is CliCommand and list(value.path) == argv[: len(value.path)]:
                return value
    return None


def run_fast(argv: list[str], groups: dict[str, LazyGroup]) -> int | None:
    """Run a hot command without click and return its exit code; None: run click instead."""
    if os.environ.get("PREMATH_CLI_FAST_PATH") == "0" or not argv or argv[0].startswith("-"):
        return None
    declared = declared_command(argv, groups)
    if declared is None or not declared.hot:
        return None
    json_mode = "--json" in argv
    try:
        kwargs = parse(declared, argv[len(declared.path) :])
        return _run(declared, kwargs, json_mode)
    except _NotSure:
        return None
    except PremathError as exc:  # a default path under a bad PREMATH_DIR, as click reports it
        return premath_error(exc, json_mode)


def _run(declared: CliCommand, kwargs: dict[str, Any], json_mode: bool) -> int | None:
    """The body under the exit point's rules (`_root.run_command`, without click)."""
    from premath.runner.interrupts import sigterm_as_ctrl_c

    try:
        with sigterm_as_ctrl_c():
            body = declared.body
            reply = body(AppContext(), **kwargs) if declared.app else body(**kwargs)
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
