"""Click commands built from the operation catalogue (premath/ops/): click's parameters carry
the CLI's presentation (help, metavars, defaults, choices), the operation's `CliFace` says
which parameter each one is; the body is the operation's own check and run, framed as the
CLI's document: `action`, `issuesPath`, then the operation's fields less what the face omits.
"""

from __future__ import annotations

from collections.abc import Callable

import click

from premath.cli._root import AppContext, Reply, pass_app
from premath.ops.operation import CliFace, Document, Operation, WriteTerms

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

Decorator = Callable[["Any"], "Any"]


def _param_names(command: click.Command, face: CliFace) -> dict[str, str]:
    """Click's name of each parameter -> the operation's; every exposed one must be declared."""
    by_flag = {flag: name for name, flag in face.options.items()}
    arguments = iter(face.arguments)
    names: dict[str, str] = {}
    for param in command.params:
        if not param.expose_value or param.name is None:
            continue
        if isinstance(param, click.Argument):
            names[param.name] = next(arguments)
        else:
            names[param.name] = next(by_flag[flag] for flag in param.opts if flag in by_flag)
    return names


def _omitting(fields: Document, omits: dict[str, tuple[str, ...]]) -> Document:
    return {
        key: {k: v for k, v in value.items() if k not in omits[key]} if key in omits else value
        for key, value in fields.items()
    }


def operation_command(
    group: click.Group,
    operation: Operation,
    *params: Decorator,
    help_text: str,
    text: Callable[[Any], str],
) -> click.Command:
    """The command `group <name>` of a catalogue operation, `params` listed top to bottom."""
    face = operation.faces.cli
    run = operation.run
    assert face is not None
    assert run is not None

    def body(app: AppContext, **given: Any) -> Reply:
        args = {names[name]: value for name, value in given.items()}
        path = args["issuesPath"]
        terms = WriteTerms(path, app.clock.now(), app.lock_timeout())
        fields = run(operation.check(args), terms)
        document = {"action": operation.action, "issuesPath": path, **fields}
        return Reply(_omitting(document, face.omits), text=text)

    decorated: Any = pass_app(body)
    for param in reversed(params):
        decorated = param(decorated)
    command: click.Command = group.command(face.path[-1], help=help_text)(decorated)
    names = _param_names(command, face)
    return command
