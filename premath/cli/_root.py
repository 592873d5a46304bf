"""The CLI's one exit point: commands return a Reply; this module writes streams and exits.

- a Reply: stdout gets the document (`--json`) or its text; exit `reply.exit_code`;
- a click usage error: click's text on stderr; exit 2;
- a PremathError: `error: <message>` on stderr; exit `exc.exit_code` (1, or 2 for usage);
- anything else: `error: internal error: ...` on stderr; exit 1.
With `--json`, each failure also prints `{"error": {"code": ..., "message": ...}}` on stdout.

JSON mode comes from the `--json` token in the arguments, the one rule that also covers usage
errors raised before any command runs.
"""

import importlib
import os
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, NamedTuple

import click

from premath.clock import Clock, SystemClock
from premath.errors import PremathError
from premath.runner.interrupts import sigterm_as_ctrl_c

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"]}


@dataclass
class AppContext:
    """State shared by every command: the clock (tests freeze it) and the lock timeout."""

    clock: Clock = field(default_factory=SystemClock)
    lock_timeout_s: float | None = None

    def lock_timeout(self) -> float:
        if self.lock_timeout_s is None:
            from premath.store.locks import lock_timeout_from_env

            self.lock_timeout_s = lock_timeout_from_env()
        return self.lock_timeout_s


pass_app = click.make_pass_decorator(AppContext, ensure=True)


@dataclass(frozen=True)
class Reply:
    """What a command answers: its stdout document, how to render it as text, its exit code."""

    document: Any
    text: Callable[[Any], str] | None = None
    exit_code: int = 0
    warnings: Sequence[str] = ()
    """Printed on stderr as `warning: ...` lines; the document stays the reference's."""
    sorted_keys: bool = True
    """False where the reference prints a struct in field order (agent-surface.md §0)."""


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


class LazyGroup(NamedTuple):
    """A command group loaded on first use: `module:attribute`, and its one-line help."""

    target: str
    short_help: str


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


def _write(stream: IO[str], data: bytes) -> None:
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        stream.flush()
        buffer.write(data)
        buffer.flush()
    else:
        stream.write(data.decode("utf-8"))
        stream.flush()


def _emit_error(code: str, message: str, json_mode: bool) -> None:
    if json_mode:
        from premath.store.canonical import stdout_bytes

        _write(sys.stdout, stdout_bytes({"error": {"code": code, "message": message}}))


def _emit_reply(reply: Reply, json_mode: bool) -> None:
    for warning in reply.warnings:
        sys.stderr.write(f"warning: {warning}\n")
    if json_mode or reply.text is None:
        from premath.store.canonical import document_bytes, stdout_bytes

        encode = stdout_bytes if reply.sorted_keys else document_bytes
        _write(sys.stdout, encode(reply.document))
    else:
        _write(sys.stdout, (reply.text(reply.document) + "\n").encode("utf-8"))


def run_command(invoke: Callable[[], Any], json_mode: bool) -> int:
    """Run click without its standalone handling and map every outcome to streams and a code."""
    try:
        with sigterm_as_ctrl_c():
            result = invoke()
        if isinstance(result, Reply):
            _emit_reply(result, json_mode)
            return result.exit_code
        return result if isinstance(result, int) else 0
    except click.UsageError as exc:
        _emit_error("usage_error", exc.format_message(), json_mode)
        exc.show()
        return 2
    except click.ClickException as exc:
        _emit_error(
            "usage_error" if exc.exit_code == 2 else "io_error", exc.format_message(), json_mode
        )
        exc.show()
        return exc.exit_code
    except click.Abort:
        message = (
            "interrupted (Ctrl-C or SIGTERM) before the command finished; files are whole "
            "(every write is atomic), so it is safe to run it again"
        )
        _emit_error("interrupted", message, json_mode)
        sys.stderr.write(f"error: {message}\n")
        return 1
    except PremathError as exc:
        if os.environ.get("PREMATH_DEBUG") == "1":
            raise
        _emit_error(exc.code, exc.message, json_mode)
        sys.stderr.write(f"error: {exc.message}\n")
        return exc.exit_code
    except BrokenPipeError:
        return 1
    except Exception as exc:
        if os.environ.get("PREMATH_DEBUG") == "1":
            raise
        message = (
            f"internal error: {type(exc).__name__}: {exc} (set PREMATH_DEBUG=1 for a traceback)"
        )
        _emit_error("internal_error", message, json_mode)
        sys.stderr.write(f"error: {message}\n")
        return 1
