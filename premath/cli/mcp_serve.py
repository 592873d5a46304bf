"""`premath mcp-serve`: the issue memory and transport as MCP tools over stdio, or over
streamable HTTP as a boundary many agents share (premath/mcp, specs/mcp-http.md)."""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, fields
from typing import Any, TypeVar

import click

from premath.cli._options import discovered_default, json_option, project_path_option
from premath.cli._root import CONTEXT_SETTINGS, AppContext, StrictCommand, pass_app
from premath.cli.observe import (
    CIWITNESS_DIR_OPTION,
    PUBLIC_URL_OPTION,
    TLS_OPTIONS,
    live_dashboard_options,
)
from premath.errors import InputInvalid, InvalidUsage

TYPE_CHECKING = False
if TYPE_CHECKING:
    from premath.mcp.server import CallLimits
    from premath.mcp.tools import ServerConfig


@click.command("mcp-serve", cls=StrictCommand, context_settings=CONTEXT_SETTINGS)
@project_path_option("--issues", default=".premath/issues.jsonl", help_text="Default issues path")
@click.option("--issue-query-backend", default="jsonl", show_default=True, help="jsonl or surreal")
@click.option(
    "--issue-query-projection",
    default=".premath/surreal_issue_cache.json",
    show_default=True,
    help="Projection cache (relative to the repo root)",
)
@click.option(
    "--mutation-policy",
    default="instruction-linked",
    show_default=True,
    help="open, or instruction-linked (mutations name an accepted instruction witness)",
)
@click.option(
    "--surface",
    default="artifacts/observation/latest.json",
    show_default=True,
    callback=discovered_default,
    help="Default observation surface (with --observe, the one the dashboard shows)",
)
@click.option(
    "--repo-root",
    default=".",
    show_default=True,
    callback=discovered_default,
    help="Repository root",
)
@click.option("--server-name", default="premath-mcp", show_default=True, help="serverInfo.name")
@click.option("--server-version", default="0.1.0", show_default=True, help="serverInfo.version")
@click.option(
    "--transport",
    type=click.Choice(["stdio", "streamable-http"]),
    default="stdio",
    show_default=True,
    help="stdio (one client), or streamable HTTP at /mcp (many clients, bearer tokens)",
)
@click.option(
    "--bind",
    default="127.0.0.1:8765",
    show_default=True,
    help="IP:PORT, [IPv6]:PORT or localhost:PORT to listen on (streamable-http; port 0 picks "
    "a free port)",
)
@click.option(
    "--token-file",
    help="Bearer tokens, one `<token id> <token>` a line, mode 0600 (default: "
    "$PREMATH_MCP_TOKEN, else on loopback a generated ~/.config/premath/mcp-serve.tokens)",
)
@TLS_OPTIONS
@click.option(
    "--observe",
    is_flag=True,
    help="Also serve the observation API and the live dashboard (streamable-http): people "
    "log in with a one-time link printed at start-up; cookies never reach /mcp",
)
@click.option(
    "--live",
    is_flag=True,
    help="With --observe: rebuild the surface whenever a witness or the issue memory changes, "
    "and feed the dashboard's issues, trajectory, KPI and runs",
)
@CIWITNESS_DIR_OPTION
@live_dashboard_options
@PUBLIC_URL_OPTION
@click.option(
    "--allow-path",
    multiple=True,
    help="A folder outside the repository root that client-named paths may use (repeatable)",
)
@click.option(
    "--call-timeout",
    type=click.FloatRange(min=0.1),
    default=30.0,
    show_default=True,
    help="Seconds a tool call may take before it is answered with a tool error",
)
@click.option(
    "--instruction-run-timeout",
    type=click.FloatRange(min=0.1),
    default=900.0,
    show_default=True,
    help="Seconds an instruction_run call (its checks) may take",
)
@click.option(
    "--witness-trust",
    type=click.Choice(["mac", "reference"]),
    default="mac",
    show_default=True,
    help="mac: a witness counts only if premath's pipeline wrote it (MAC, no symlink, scope, "
    "age); reference: any accepted witness file, as the reference trusts it",
)
@click.option(
    "--witness-max-age",
    default="24h",
    show_default=True,
    help="Oldest instruction witness the gate honours (e.g. 90m, 24h, 7d; `none`: no limit)",
)
@click.option(
    "--witness-key-file",
    help="Witness MAC keys (default: $PREMATH_WITNESS_KEY_FILE, else "
    "~/.config/premath/witness.keys)",
)
@click.option(
    "--max-body-bytes",
    type=click.IntRange(min=1024),
    default=4 * 1024 * 1024,
    show_default=True,
    help="Largest HTTP request body; larger ones are answered 413",
)
@click.option(
    "--client-timeout",
    type=click.FloatRange(min=0.1),
    default=15.0,
    show_default=True,
    help="Seconds a client gets to send a request's head, and again its body (slow clients)",
)
@click.option(
    "--max-connections",
    type=click.IntRange(min=1),
    default=4096,
    show_default=True,
    help="Open HTTP connections served at once; more are answered 503",
)
@click.option(
    "--access-log",
    help="Where access lines go: `-` is stderr (the default over HTTP), or a file; none over "
    "stdio unless given",
)
@json_option
@pass_app
def mcp_serve(app: AppContext, /, **options: Any) -> int:
    """Serve the issue tools over MCP (stdio or HTTP).

    Stdio speaks newline-delimited JSON-RPC to one client; streamable HTTP serves many at
    /mcp, each request with `Authorization: Bearer <token>` (specs/mcp-http.md), and with
    --observe the live dashboard for people too.

    With --json, a start-up error is also printed as a JSON error document on stdout.

    \b
    premath mcp-serve --issues .premath/issues.jsonl
    premath mcp-serve --transport streamable-http --token-file tokens
    premath mcp-serve --transport streamable-http --observe --live
    """
    serve_options = ServeOptions.of(options)
    _announce(serve_options)
    choices = _checked_choices(serve_options.tools)
    _check_dashboard(serve_options)
    from premath.mcp.access_log import open_access_log
    from premath.mcp.server import CallLimits, serve  # lazy: the SDK loads only here

    config = _server_config(serve_options.tools, choices, app.lock_timeout())
    limits = CallLimits(
        call_timeout_s=serve_options.call_timeout,
        run_timeout_s=serve_options.instruction_run_timeout,
    )
    if serve_options.transport == "stdio":
        serve(
            config,
            serve_options.server_name,
            serve_options.server_version,
            limits,
            open_access_log(serve_options.access_log),
        )
        return 0
    _serve_http(config, limits, serve_options)
    return 0


@dataclass(frozen=True)
class ToolOptions:
    """What the tools serve: the stores, their backend, the mutation gate and its witnesses."""

    issues: str
    issue_query_backend: str
    issue_query_projection: str
    mutation_policy: str
    surface: str
    repo_root: str
    allow_path: tuple[str, ...]
    witness_trust: str
    witness_max_age: str
    witness_key_file: str | None
    trajectory_path: str


@dataclass(frozen=True)
class HttpOptions:
    """Where and how streamable HTTP listens, and the bounds it puts on clients."""

    bind: str
    token_file: str | None
    tls_cert: str | None
    tls_key: str | None
    public_url: str | None
    max_body_bytes: int
    client_timeout: float
    max_connections: int


@dataclass(frozen=True)
class DashboardOptions:
    """`--observe` and the live dashboard's inputs."""

    observe: bool
    live: bool
    ciwitness_dir: str
    out_jsonl: str
    runs_dir: str


_Group = TypeVar("_Group", ToolOptions, HttpOptions, DashboardOptions)


@dataclass(frozen=True)
class ServeOptions:
    """`mcp-serve`'s options, grouped by what they configure."""

    transport: str
    server_name: str
    server_version: str
    call_timeout: float
    instruction_run_timeout: float
    access_log: str | None
    tools: ToolOptions
    http: HttpOptions
    dashboard: DashboardOptions

    @classmethod
    def of(cls, options: dict[str, Any]) -> ServeOptions:
        """The groups from click's keyword arguments (one per option, named as its flag)."""

        def group(kind: type[_Group]) -> _Group:
            return kind(**{field.name: options[field.name] for field in fields(kind)})

        groups: dict[str, Any] = {
            "tools": group(ToolOptions),
            "http": group(HttpOptions),
            "dashboard": group(DashboardOptions),
        }
        top = {field.name: options[field.name] for field in fields(cls) if field.name not in groups}
        return cls(**top, **groups)


def _announce(options: ServeOptions) -> None:
    """The start-up lines on stderr, before anything is checked."""
    tools = options.tools
    lines = [
        "premath mcp-serve",
        f"  transport: {options.transport}",
        f"  server: {options.server_name} {options.server_version}",
        f"  default issues path: {tools.issues}",
        f"  issue query backend: {tools.issue_query_backend}",
        f"  issue query projection: {tools.issue_query_projection}",
        f"  mutation policy: {tools.mutation_policy}",
        f"  default surface path: {tools.surface}",
        f"  repo root: {tools.repo_root}",
    ]
    sys.stderr.write("\n".join(lines) + "\n")
    sys.stderr.flush()


def _checked_choices(tools: ToolOptions) -> tuple[str, str, float | None]:
    """(query backend, mutation policy, witness max age in seconds), refused with the
    reference's words when they name no choice."""
    backend = tools.issue_query_backend.strip()
    if backend not in ("jsonl", "surreal"):
        raise InputInvalid(
            f"mcp server failed: invalid issue_query_backend `{backend}` "
            "(expected `jsonl` or `surreal`)"
        )
    policy = tools.mutation_policy.strip()
    if policy not in ("open", "instruction-linked"):
        raise InputInvalid(
            f"mcp server failed: invalid mutation_policy `{policy}` "
            "(expected `open` or `instruction-linked`)"
        )
    return backend, policy, _duration_s(tools.witness_max_age)


def _check_dashboard(options: ServeOptions) -> None:
    """The dashboard's flags need HTTP and each other (exit 2)."""
    dashboard = options.dashboard
    if dashboard.observe and options.transport == "stdio":
        raise InvalidUsage(
            "--observe serves the dashboard over HTTP: add --transport streamable-http"
        )
    if dashboard.live and not dashboard.observe:
        raise InvalidUsage("--live rebuilds the surface the dashboard shows: add --observe")
    if options.http.public_url is not None and not dashboard.observe:
        raise InvalidUsage("--public-url names the login links of the dashboard: add --observe")


def _server_config(
    tools: ToolOptions, choices: tuple[str, str, float | None], lock_timeout_s: float
) -> ServerConfig:
    from premath.mcp.tools import ServerConfig

    backend, policy, max_age_s = choices
    root = (
        tools.repo_root
        if os.path.isabs(tools.repo_root)
        else os.path.join(os.getcwd(), tools.repo_root)
    )
    projection = tools.issue_query_projection
    if not os.path.isabs(projection):
        projection = os.path.join(root, projection)
    return ServerConfig(
        issues_path=tools.issues,
        query_backend=backend,
        projection_path=projection,
        mutation_policy="open" if policy == "open" else "instruction-linked",
        surface_path=tools.surface,
        repo_root=root,
        lock_timeout_s=lock_timeout_s,
        allowed_paths=tools.allow_path,
        witness_trust="reference" if tools.witness_trust == "reference" else "mac",
        witness_max_age_s=max_age_s,
        witness_key_file=tools.witness_key_file,
        trajectory_path=tools.trajectory_path,
    )


def _serve_http(config: ServerConfig, limits: CallLimits, options: ServeOptions) -> None:
    """Streamable HTTP at /mcp (and with --observe the dashboard beside it) until stopped."""
    from premath.mcp.access_log import open_access_log
    from premath.mcp.http import serve_http
    from premath.web.serve import ObservationOptions
    from premath.web.server import ServerLimits, parse_bind, parse_public_url, tls_files
    from premath.web.tokens import resolve_tokens

    http, dashboard, tools = options.http, options.dashboard, options.tools
    try:
        address = parse_bind(http.bind)
    except InputInvalid:
        raise InvalidUsage(
            f"--bind must be HOST:PORT with an IP address, [IPv6 address] or localhost as HOST "
            f"(e.g. 127.0.0.1:8765), got {http.bind!r}"
        ) from None
    tls = tls_files(http.tls_cert, http.tls_key)
    tokens, note = resolve_tokens(http.token_file, loopback=address.loopback, where=http.bind)
    if note:
        sys.stderr.write(f"  {note}\n")
    server_limits = ServerLimits(
        client_timeout_s=http.client_timeout,
        max_body_bytes=http.max_body_bytes,
        max_connections=http.max_connections,
        shutdown_grace_s=int(options.call_timeout) + 5,
    )
    observation = None
    if dashboard.observe:
        observation = ObservationOptions(
            surface=tools.surface,
            live=dashboard.live,
            repo_root=tools.repo_root,
            ciwitness_dir=dashboard.ciwitness_dir,
            issues_path=os.path.abspath(tools.issues),
            out_jsonl=dashboard.out_jsonl,
            trajectory_path=tools.trajectory_path,
            runs_dir=dashboard.runs_dir,
        )
    serve_http(
        config,
        options.server_name,
        options.server_version,
        bind=address,
        tokens=tokens,
        limits=limits,
        server_limits=server_limits,
        log=open_access_log(options.access_log or "-"),
        tls=tls,
        observation=observation,
        public_url=parse_public_url(http.public_url),
    )


_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd]?)")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def _duration_s(text: str) -> float | None:
    """`--witness-max-age`: seconds, or a number with s/m/h/d; `none` is no limit."""
    value = text.strip().lower()
    if value == "none":
        return None
    match = _DURATION.fullmatch(value)
    if match is None or float(match.group(1)) <= 0:
        raise InvalidUsage(
            f"--witness-max-age must be a positive duration like 90m, 24h or 7d, or none; "
            f"got {text!r}"
        )
    return float(match.group(1)) * _UNITS[match.group(2)]
