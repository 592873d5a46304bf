"""A catalogued operation's command: its `CliCommand` built from the operation (premath/ops/).

The operation's `CliFace` says which parameter is a positional argument and how each option is
spelled, in help order; the parameters give the kind, choices and whether one is required; the
face's `help` and `presented` carry what only the command line shows (help texts, metavars,
defaults). `hot` is the operation's. The body is the operation's own check and run, framed as
the CLI's document (`action`, `issuesPath`, then the operation's fields less what the face
omits), unless the command declares a body of its own (`issue update`'s `--notes-file`).

The hot commands load this module: it imports no click, typing or re, nor the operation's
service (each run imports that when it runs).
"""

from __future__ import annotations

from premath.cli._declaration import CHOICE, FLAG, INT, ISSUES, JSON, STR, CliCommand, CliParam
from premath.cli._reply import Reply
from premath.models.params import INTEGER_RANGES, snake_case

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from premath.cli._reply import AppContext
    from premath.models.params import Param
    from premath.ops.operation import CliFace, Document, Operation

SHARED = {"issuesPath": ISSUES}
"""Parameters every command of a group spells alike: the issues file is the `--issues` option."""


def _kind(param: Param | None) -> dict[str, Any]:
    """The command line's kind of an operation's parameter (a CLI-only option is a string)."""
    if param is None or (param.kind == "string" and not param.choices):
        return {"kind": STR}
    if param.kind == "string":
        return {"kind": CHOICE, "choices": param.choices}
    if param.kind == "bool":
        return {"kind": FLAG}
    if param.kind in INTEGER_RANGES:
        low, high = INTEGER_RANGES[param.kind]
        return {"kind": INT, "low": low, "high": high}
    raise ValueError(f"{param.name}: a {param.kind} parameter has no command-line kind")


def cli_params(operation: Operation) -> tuple[CliParam, ...]:
    """The command's parameters: the face's arguments, then its options, then `--json`."""
    face = _face(operation)
    taken = {param.name: param for param in operation.params}
    params: list[CliParam] = []
    for name in face.arguments:
        settings = {**_kind(taken[name]), **face.presented.get(name, {})}
        params.append(CliParam(snake_case(name), required=True, **settings))
    for name, flag in face.options.items():
        if name in SHARED:
            params.append(SHARED[name])
            continue
        param = taken.get(name)
        required = param is not None and param.required
        settings = {**_kind(param), "required": required, **face.presented.get(name, {})}
        params.append(CliParam(snake_case(name), (flag,), **settings))
    return (*params, JSON)


def _face(operation: Operation) -> CliFace:
    face = operation.faces.cli
    if face is None:
        raise ValueError(f"{operation.action} is not offered on the command line")
    return face


def _omitting(fields: Document, omits: Mapping[str, tuple[str, ...]]) -> Document:
    return {
        key: {k: v for k, v in value.items() if k not in omits[key]} if key in omits else value
        for key, value in fields.items()
    }


def cli_command(
    operation: Operation,
    body: Callable[..., Reply] | None = None,
    *,
    text: Callable[[Any], str] | None = None,
) -> CliCommand:
    """The command of a catalogued operation: its declaration from the operation, its body
    `body` (taking the `AppContext` and the parsed values; no docstring, the face's `help` is
    its help) or else the operation's run with `text` as the text renderer."""
    face = _face(operation)
    params = cli_params(operation)
    if body is None:
        spelled = (param.name for param in params)  # `--json` last, never passed
        names = dict(zip(spelled, (*face.arguments, *face.options), strict=False))
        body = _operation_body(operation, face, names, text)
    if body.__doc__ not in (None, face.help):
        raise ValueError(f"{operation.action}: its help is the face's, not the body's docstring")
    body.__doc__ = face.help  # click's help, as for every declared command
    return CliCommand(face.path, params, body, app=True, hot=operation.hot)


def operation_command(operation: Operation) -> Callable[[Callable[..., Reply]], CliCommand]:
    """Declare the decorated body as `operation`'s command (`cli_command` with that body)."""

    def declare(body: Callable[..., Reply]) -> CliCommand:
        return cli_command(operation, body)

    return declare


def _operation_body(
    operation: Operation,
    face: CliFace,
    names: dict[str, str],
    text: Callable[[Any], str] | None,
) -> Callable[..., Reply]:
    run = operation.run
    if run is None:
        raise ValueError(f"{operation.action} has no run to call")

    def body(app: AppContext, /, **given: Any) -> Reply:
        from premath.ops.operation import WriteTerms

        args = {names[name]: value for name, value in given.items()}
        path = args["issuesPath"]
        terms = WriteTerms(path, app.clock.now(), app.lock_timeout())
        fields = run(operation.check(args), terms)
        document = {"action": operation.action, "issuesPath": path, **fields}
        return Reply(_omitting(document, face.omits), text=text)

    return body
