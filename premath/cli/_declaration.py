"""A command declared once, as plain data beside its body: click builds it, the fast path parses it.

A `CliCommand` is what a face needs to offer one operation on the command line: its path
(`("issue", "ready")`), its parameters (`CliParam`: spellings, kind, default, choices,
bounds, help), the body called with the parsed values, whether the body takes the `AppContext`
first, and `hot`: whether `premath.cli.main` parses it without importing click
(`cli/_fast.py`). `cli/_options.click_command` turns the same declaration into the click
command that `--help`, every error and every other form go through, so the two parsers cannot
disagree on what a command accepts (tests/cli/test_fast_path.py holds them to the same bytes).

A parameter's kind is one of `KINDS`, said by the declaration, never guessed from a click
type. The hot commands load this module: it imports no click, typing or re.
"""

from __future__ import annotations

from premath.models.vocabulary import DEFAULT_ISSUES_PATH

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

STR = "str"
FLAG = "flag"
CHOICE = "choice"
INT = "int"
"""A whole number as click's INT reads it, within `low`..`high` when they are given."""
USIZE = "usize"
"""clap's `usize`: ASCII digits (an optional `+`), at most 2^64-1."""
PRIORITY = "priority"
"""An issue priority: a whole number that fits in 32 bits, said in words when it does not."""
KINDS = frozenset({STR, FLAG, CHOICE, INT, USIZE, PRIORITY})

PROJECT_ROOT = "the nearest folder above holding .premath/, else the git root"
"""Where default paths live (premath.store.root), as help texts say it."""


class CliParam:
    """One option or positional argument of a command.

    `name` is the keyword the body receives (`expose=False`: parsed, never passed, as `--json`,
    which the exit point reads from the arguments); `opts` are the option's spellings, empty
    for a positional argument; `project_default`: a path left at its default lives under the
    project root (`premath.store.root.rebase`)."""

    __slots__ = (
        "choices",
        "default",
        "expose",
        "help",
        "high",
        "kind",
        "low",
        "metavar",
        "multiple",
        "name",
        "opts",
        "project_default",
        "required",
        "show_default",
    )

    def __init__(
        self,
        name: str,
        opts: tuple[str, ...] = (),
        *,
        kind: str = STR,
        default: Any = None,
        required: bool = False,
        multiple: bool = False,
        choices: tuple[str, ...] = (),
        low: int | None = None,
        high: int | None = None,
        help: str | None = None,
        show_default: bool = False,
        metavar: str | None = None,
        project_default: bool = False,
        expose: bool = True,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"{name}: unknown parameter kind {kind!r}")
        if (kind == CHOICE) != bool(choices):
            raise ValueError(f"{name}: choices go with the choice kind, and only with it")
        self.name = name
        self.opts = opts
        self.kind = kind
        self.default = default
        self.required = required
        self.multiple = multiple
        self.choices = choices
        self.low = low
        self.high = high
        self.help = help
        self.show_default = show_default
        self.metavar = metavar
        self.project_default = project_default
        self.expose = expose

    def absent(self) -> Any:
        """What the body receives when the command line leaves this parameter out."""
        if self.multiple:
            return tuple(self.default or ())
        if self.kind == FLAG:
            return bool(self.default)
        return self.default


class CliCommand:
    """One command: its path under `premath`, its parameters in help order, its body."""

    __slots__ = ("app", "body", "hot", "params", "path")

    def __init__(
        self,
        path: tuple[str, ...],
        params: tuple[CliParam, ...],
        body: Callable[..., Any],
        *,
        app: bool = False,
        hot: bool = False,
    ) -> None:
        self.path = path
        self.params = params
        self.body = body
        self.app = app
        self.hot = hot


def option(*decls: str, **settings: Any) -> CliParam:
    """An option, spelled as click spells it: `option("--input", "input_path", help=...)`.

    Without a bare name, the name is the first long spelling's (`--lease-id`: `lease_id`)."""
    opts = tuple(decl for decl in decls if decl.startswith("-"))
    names = [decl for decl in decls if not decl.startswith("-")]
    long = [opt for opt in opts if opt.startswith("--")]
    name = names[0] if names else (long or opts)[0].lstrip("-").replace("-", "_").lower()
    return CliParam(name, opts, **settings)


def argument(name: str, *, metavar: str | None = None) -> CliParam:
    """A required positional argument taken as it is."""
    return CliParam(name, kind=STR, required=True, metavar=metavar)


def project_path(*decls: str, default: str, help_text: str) -> CliParam:
    """A path option whose default lives in the project, said once in its help."""
    return option(
        *decls,
        default=default,
        help=f"{help_text} [default: {default} in {PROJECT_ROOT}]",
        project_default=True,
    )


def path_param(default: str, help_text: str, alias: str) -> CliParam:
    """`--path` (the reference's spelling) and the loop's spelling of the same file."""
    return project_path("--path", alias, "path", default=default, help_text=help_text)


JSON = option("--json", "json_output", kind=FLAG, expose=False, help="Output as JSON")
"""`--json`: the exit point reads it from the arguments, so no body receives it."""

ISSUES = project_path(
    "--issues",
    "--issues-path",
    "issues",
    default=DEFAULT_ISSUES_PATH,
    help_text="Issues JSONL path",
)
"""The issue memory's file, for the `issue` and `dep` groups."""


def command(
    path: str, *params: CliParam, app: bool = False, hot: bool = False
) -> Callable[[Callable[..., Any]], CliCommand]:
    """Declare the decorated body as the command `path` (`"issue ready"`) with `params`.

    `app`: the body takes the `AppContext` first; `hot`: the fast path runs it without click."""

    def declare(body: Callable[..., Any]) -> CliCommand:
        return CliCommand(tuple(path.split(" ")), params, body, app=app, hot=hot)

    return declare
