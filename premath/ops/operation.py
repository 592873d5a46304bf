"""One operation as plain data plus its function: where each face offers it, its parameters,
whether it mutates and under which gate, its failure classes, and the service call.

A face (MCP tool, host action, CLI command, transport action, remote client) is an adapter:
it reads the arguments with `params.check_arguments` under its own `Reading`, runs the
operation's `check`, resolves the gate where the operation mutates, then `run`, and renders
the result or the refusal in its own words. Differences the reference makes between faces are
fields here, never a second implementation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from premath.lean import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any

    from premath.models.params import Param

Document = dict[str, "Any"]
FACES = ("mcp", "host", "cli", "transport", "remote")
NOTHING: Mapping[str, Any] = MappingProxyType({})


class CliFace(NamedTuple):
    """The command path (`("dep", "add")`) and how it spells each parameter: positional
    arguments in order, then `--flag` options by parameter name, in help order. An option
    whose name the operation does not take is the command line's own (`issue update
    --notes-file`), handled by the command's body.

    The CLI's command is built from this (`cli/_operations.cli_command`): kinds, choices and
    requiredness from the parameters, the rest (help texts, metavars, defaults) from
    `help` and `presented`."""

    path: tuple[str, ...]
    arguments: tuple[str, ...] = ()
    options: Mapping[str, str] = NOTHING
    omits: Mapping[str, tuple[str, ...]] = NOTHING
    """Result fields the CLI's document leaves out where the reference's CLI does (its
    `dep add` edge has no `createdBy`; the MCP tool's has)."""
    help: str = ""
    """The command's help text (click's: its first line is the short help)."""
    presented: Mapping[str, Mapping[str, Any]] = NOTHING
    """How the command line presents a parameter, by name: `cli/_declaration.CliParam`'s
    settings (`help`, `metavar`, `default`, `show_default`, a CLI `kind` such as
    `priority`)."""


class Faces(NamedTuple):
    """The operation's name at each face that offers it (None: not offered there)."""

    mcp: str | None = None
    host: str | None = None
    cli: CliFace | None = None
    transport: str | None = None
    remote: str | None = None
    """The remote client's method that calls it, `module:Class.method`."""


class WriteTerms(NamedTuple):
    """What a face hands an issue mutation: the store, the call's clock and lock budget, the
    hook that attaches the write witness under the lock, the face's warm stores."""

    path: str
    now: datetime
    timeout_s: float
    on_row: Callable[[Any], None] | None = None
    warm: Any = None
    caller: str | None = None
    """Who calls (the MCP token id; None on stdio): a held issue's update says who holds it."""
    warns_held: bool = False
    """Whether the face's document carries `warnings` on a held issue (MCP, D35-4)."""

    def store_terms(self) -> dict[str, Any]:
        """The keyword arguments every issues/memory writer takes."""
        return {
            "now": self.now,
            "timeout_s": self.timeout_s,
            "on_row": self.on_row,
            "warm": self.warm,
        }


Check = Callable[[Document], Document]
Run = Callable[[Document, WriteTerms], Document]


def _unchecked(args: Document) -> Document:
    return args


class Operation(NamedTuple):
    """One operation, declared once.

    `action` is its wire name (the gate's action claim, the write witness's action, the
    result's `action`). `check` normalises the checked arguments and raises ArgumentRefused
    before anything is gated or written; `run` makes the service call and returns the
    operation's own result fields (`dependency`, `issue`), which each face frames."""

    action: str
    summary: str
    params: tuple[Param, ...]
    faces: Faces
    run: Run | None = None
    check: Check = _unchecked
    mutates: bool = False
    gate: str | None = None
    """The instruction gate's action claim (`capabilities.change_morphisms.<gate>`)."""
    issue_param: str | None = None
    """The parameter naming the issue it changes: the gate's scope; a host action defaults
    it to the call's issue, so it is optional there (agent-surface.md §3.5). Where it is
    optional and left out (a new issue of no given id), the written row must be one the
    witness's scope names."""
    creates_store: bool = False
    """It creates the issues file when missing (`issue add`); else a missing file refuses."""
    failure_classes: tuple[str, ...] = ()
    read_only: bool = True
    idempotent: bool = False
    hot: bool = False
    """On the CLI fast path: the command answers without loading click."""

    def params_at(self, face: str) -> tuple[Param, ...]:
        """The parameters this face takes, as it reads them."""
        taken = tuple(p for p in self.params if p.faces is None or face in p.faces)
        if face != "host" or self.issue_param is None:
            return taken
        return tuple(p._replace(required=False) if p.name == self.issue_param else p for p in taken)
