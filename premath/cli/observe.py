"""`premath observe-build`, `premath observe` and `premath observe-serve` (specs/observation.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from premath.cli._options import discovered_default, json_option
from premath.cli._root import CONTEXT_SETTINGS, AppContext, Reply, StrictCommand, pass_app
from premath.errors import InvalidUsage

SURFACE_PATH = "artifacts/observation/latest.json"
EVENTS_PATH = "artifacts/observation/events.jsonl"


F = TypeVar("F", bound=Callable[..., Any])


def _options(*options: Callable[[F], F]) -> Callable[[F], F]:
    """Several click options as one decorator, in the order given."""

    def apply(command: F) -> F:
        for option in reversed(options):
            command = option(command)
        return command

    return apply


CIWITNESS_DIR_OPTION = click.option(
    "--ciwitness-dir",
    default="artifacts/ciwitness",
    show_default=True,
    help="Folder of the CI and instruction witnesses",
)
_build_inputs = _options(
    click.option(
        "--repo-root",
        default=".",
        show_default=True,
        callback=discovered_default,
        help="Repository root; relative paths below join it",
    ),
    CIWITNESS_DIR_OPTION,
    click.option(
        "--issues-path",
        default=".premath/issues.jsonl",
        show_default=True,
        help="Issue memory",
    ),
)
"""The input flags `observe-build` and `observe-serve --live` share."""
live_dashboard_options = _options(
    click.option(
        "--out-jsonl", default=EVENTS_PATH, show_default=True, help="Events to write (--live)"
    ),
    click.option(
        "--trajectory-path",
        default=".premath/harness_trajectory.jsonl",
        show_default=True,
        help="Harness trajectory the dashboard shows (--live; relative to the repo root)",
    ),
    click.option(
        "--runs-dir",
        default=".premath/runs",
        show_default=True,
        help="Experiment runs the dashboard lists (--live; relative to the repo root)",
    ),
)
"""The live dashboard's flags `observe-serve` and `mcp-serve --observe` share."""
TLS_OPTIONS = _options(
    click.option("--tls-cert", help="TLS certificate (PEM) to serve HTTPS; with --tls-key"),
    click.option("--tls-key", help="TLS private key (PEM); with --tls-cert"),
)
PUBLIC_URL_OPTION = click.option(
    "--public-url",
    help="http[s]://HOST[:PORT] people reach the server at (a TLS proxy's address): login "
    "links start with it (default: the bound address; never a request's Host)",
)


@click.command("observe-build", cls=StrictCommand, context_settings=CONTEXT_SETTINGS)
@_build_inputs
@click.option("--out-json", default=SURFACE_PATH, show_default=True, help="Surface to write")
@click.option("--out-jsonl", default=EVENTS_PATH, show_default=True, help="Events to write")
@click.option(
    "--live-attention",
    is_flag=True,
    help="Add summary.live: stale leases now, open escalations, recent failures, KPI decision",
)
@click.option(
    "--trajectory-path",
    default=".premath/harness_trajectory.jsonl",
    show_default=True,
    help="Harness trajectory read by --live-attention (relative to the repo root)",
)
@json_option
@pass_app
def observe_build(
    app: AppContext,
    repo_root: str,
    ciwitness_dir: str,
    issues_path: str,
    out_json: str,
    out_jsonl: str,
    live_attention: bool,
    trajectory_path: str,
) -> Reply:
    """Build the observation surface from CI witnesses.

    It reads the CI witnesses and the issue memory, and writes the surface and its events
    together (a failure leaves both as they were).

    \b
    premath observe-build --json
    """
    from premath.observe.attention import LiveInputs, read_trajectory_facts
    from premath.observe.builder import BuildPaths, build_observation, rust_join
    from premath.observe.documents import build_line
    from premath.record.worker_board import silent_workers_at

    paths = BuildPaths.resolve(repo_root, ciwitness_dir, issues_path, out_json, out_jsonl)
    live = None
    if live_attention:
        now = app.clock.now()
        trajectory = read_trajectory_facts(rust_join(paths.repo_root, trajectory_path), now)
        live = LiveInputs(now, trajectory, silent_workers_at(paths.issues_path, now))
    result = build_observation(paths, live=live)
    return Reply(result.surface.document(), text=lambda _: build_line(result), sorted_keys=False)


@click.command("observe", cls=StrictCommand, context_settings=CONTEXT_SETTINGS)
@click.option(
    "--surface",
    default=SURFACE_PATH,
    show_default=True,
    callback=discovered_default,
    help="Observation surface to read",
)
@click.option(
    "--mode",
    type=click.Choice(["latest", "needs_attention", "instruction", "projection"]),
    default="latest",
    show_default=True,
    help="View to print",
)
@click.option("--instruction-id", help="Instruction to show (--mode instruction)")
@click.option("--projection-digest", help="Projection digest to look up (--mode projection)")
@click.option(
    "--projection-match",
    type=click.Choice(["typed", "compatibility_alias"]),
    default="typed",
    show_default=True,
    help="Match typed digests only, or alias (proj1_) digests too",
)
@json_option
def observe(
    surface: str,
    mode: str,
    instruction_id: str | None,
    projection_digest: str | None,
    projection_match: str,
) -> Reply:
    """Query the observation surface (four modes).

    The modes: latest, needs_attention, instruction or projection.

    \b
    premath observe --mode needs_attention --json
    """
    from functools import partial

    from premath.observe.documents import view_text
    from premath.observe.surface import load_surface
    from premath.observe.views import answer, query_for

    loaded = load_surface(surface)
    query = query_for(mode, instruction_id, projection_digest, projection_match)
    return Reply(answer(loaded, query), text=partial(view_text, query), sorted_keys=False)


@click.command("observe-serve", cls=StrictCommand, context_settings=CONTEXT_SETTINGS)
@click.option(
    "--surface",
    default=SURFACE_PATH,
    show_default=True,
    callback=discovered_default,
    help="Observation surface to serve (with --live, also where it is rebuilt)",
)
@click.option(
    "--bind",
    default="127.0.0.1:43174",
    show_default=True,
    help="IP:PORT, [IPv6]:PORT or localhost:PORT (port 0: any free port)",
)
@click.option(
    "--live",
    is_flag=True,
    help="Rebuild the surface whenever a witness or the issue memory changes, and feed the "
    "dashboard's issues, trajectory, KPI and runs",
)
@_build_inputs
@live_dashboard_options
@click.option(
    "--header-timeout-seconds",
    type=click.FloatRange(min=0.1, max=3600),
    default=10.0,
    show_default=True,
    help="Close a connection whose request line and headers (or body) take longer than this (408)",
)
@click.option(
    "--token-file",
    help="Bearer tokens, one `<token id> <token>` a line, mode 0600: every route but /healthz "
    "then needs a token or a browser login (a one-time link is printed); without it none does",
)
@TLS_OPTIONS
@PUBLIC_URL_OPTION
@json_option
@pass_app
def observe_serve(
    app: AppContext,
    surface: str,
    bind: str,
    live: bool,
    repo_root: str,
    ciwitness_dir: str,
    issues_path: str,
    out_jsonl: str,
    trajectory_path: str,
    runs_dir: str,
    header_timeout_seconds: float,
    token_file: str | None,
    tls_cert: str | None,
    tls_key: str | None,
    public_url: str | None,
) -> int:
    """Serve the observation API and live dashboard.

    It serves over HTTP until stopped.

    Binds to loopback unless told otherwise; the dashboard is at /dashboard.

    \b
    premath observe-serve --live --bind 127.0.0.1:43174
    """
    import sys

    from premath.web.serve import ObservationOptions, ServeOptions, serve_observation
    from premath.web.server import parse_public_url, tls_files

    if public_url is not None and token_file is None:
        raise InvalidUsage("--public-url names the login links, which --token-file turns on")

    observation = ObservationOptions(
        surface=surface,
        live=live,
        repo_root=repo_root,
        ciwitness_dir=ciwitness_dir,
        issues_path=issues_path,
        out_jsonl=out_jsonl,
        trajectory_path=trajectory_path,
        runs_dir=runs_dir,
    )
    options = ServeOptions(
        observation,
        bind,
        client_timeout_s=header_timeout_seconds,
        token_file=token_file,
        tls=tls_files(tls_cert, tls_key),
        public_url=parse_public_url(public_url),
    )
    serve_observation(options, app.clock, out=sys.stdout, err=sys.stderr)
    return 0
