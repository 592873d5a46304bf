"""The CLI's one exit point: commands return a Reply; this module writes streams and exits.

- a Reply: stdout gets the document (`--json`) or its text; exit `reply.exit_code`;
- a click usage error: click's text on stderr; exit 2;
- a PremathError: `error: <message>` on stderr; exit `exc.exit_code` (1, or 2 for usage);
- anything else: `error: internal error: ...` on stderr; exit 1.
With `--json`, each failure also prints `{"error": {"code": ..., "message": ...}}` on stdout.

JSON mode comes from the `--json` token in the arguments, the one rule that also covers usage
errors raised before any command runs.
"""

from __future__ import annotations

import importlib
import sys
from collections import Counter
from collections.abc import Callable, Sequence

import click

from premath import __version__
from premath.cli._exit import emit_error, emit_reply, internal_error, interrupted, premath_error
from premath.cli._reply import AppContext, LazyGroup, Reply
from premath.errors import PremathError
from premath.runner.interrupts import sigterm_as_ctrl_c

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["AppContext", "LazyGroup", "Reply"]

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"]}

pass_app = click.make_pass_decorator(AppContext, ensure=True)


class StrictCommand(click.Command):
    """A command that, like clap, refuses a single-valued option given twice (exit 2)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            _, _, order = self.make_parser(ctx).parse_args(args=list(args))
        except click.UsageError:
            return super().parse_args(ctx, args)
        counts = Counter(
            param
            for param in order
            if isinstance(param, click.Option) and not param.multiple and not param.count
        )
        for param, count in counts.items():
            if count > 1:
                raise click.UsageError(
                    f"the argument '{param.opts[-1]}' cannot be used multiple times", ctx=ctx
                )
        return super().parse_args(ctx, args)


class StrictGroup(click.Group):
    """A group whose commands and subgroups are strict too."""

    command_class = StrictCommand
    group_class = type


class RootGroup(StrictGroup):
    """The `premath` group: loads command groups on first use (start-up budget) and exits once."""

    def __init__(self, *args: Any, lazy_subcommands: dict[str, LazyGroup], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_subcommands = lazy_subcommands

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_subcommands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        lazy = self.lazy_subcommands.get(cmd_name)
        if lazy is None:
            return super().get_command(ctx, cmd_name)
        module_name, attribute = lazy.target.split(":")
        command: click.Command = getattr(importlib.import_module(module_name), attribute)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's command list, from the stored help lines: listing loads no group."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(map(len, names))
        rows = []
        for name in names:
            lazy = self.lazy_subcommands.get(name)
            if lazy is not None:
                stand_in = click.Command(name, help=lazy.short_help)
                rows.append((name, stand_in.get_short_help_str(limit)))
                continue
            command = super().get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> None:
        argv = list(sys.argv[1:] if args is None else args)
        json_mode = "--json" in argv
        extra.setdefault("obj", AppContext())
        parent_main = super().main
        code = run_command(
            lambda: parent_main(argv, prog_name or "premath", standalone_mode=False, **extra),
            json_mode,
        )
        sys.exit(code)


def run_command(invoke: Callable[[], Any], json_mode: bool) -> int:
    """Run click without its standalone handling and map every outcome to streams and a code."""
    try:
        with sigterm_as_ctrl_c():
            result = invoke()
        if isinstance(result, Reply):
            return emit_reply(result, json_mode)
        return result if isinstance(result, int) else 0
    except click.UsageError as exc:
        emit_error("usage_error", exc.format_message(), json_mode)
        exc.show()
        return 2
    except click.ClickException as exc:
        emit_error(
            "usage_error" if exc.exit_code == 2 else "io_error", exc.format_message(), json_mode
        )
        exc.show()
        return exc.exit_code
    except click.Abort:
        return interrupted(json_mode)
    except PremathError as exc:
        return premath_error(exc, json_mode)
    except BrokenPipeError:
        return 1
    except Exception as exc:  # noqa: BLE001 - the one exit point: anything else is internal
        return internal_error(exc, json_mode)


def root_group(groups: dict[str, LazyGroup]) -> RootGroup:
    """The `premath` group over `groups` (`premath.cli.COMMAND_GROUPS`)."""

    @click.group(
        cls=RootGroup,
        lazy_subcommands=groups,
        context_settings=CONTEXT_SETTINGS,
        no_args_is_help=True,
    )
    @click.version_option(__version__, "--version", "-V", prog_name="premath")
    def cli() -> None:
        """Harness runtime for coding agents: artifacts, issue memory, gated loops, harness runs."""

    assert isinstance(cli, RootGroup)
    return cli
