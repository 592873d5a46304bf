"""`premath mcp-serve`: the issue memory and transport as MCP tools over stdio, or over
streamable HTTP as a boundary many agents share (premath/mcp, specs/mcp-http.md)."""

from __future__ import annotations

import os
import re
import sys

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
def mcp_serve(
    app: AppContext,
    issues: str,
    issue_query_backend: str,
    issue_query_projection: str,
    mutation_policy: str,
    surface: str,
    repo_root: str,
    server_name: str,
    server_version: str,
    transport: str,
    bind: str,
    token_file: str | None,
    tls_cert: str | None,
    tls_key: str | None,
    observe: bool,
    live: bool,
    ciwitness_dir: str,
    out_jsonl: str,
    trajectory_path: str,
    runs_dir: str,
    public_url: str | None,
    allow_path: tuple[str, ...],
    call_timeout: float,
    instruction_run_timeout: float,
    witness_trust: str,
    witness_max_age: str,
    witness_key_file: str | None,
    max_body_bytes: int,
    client_timeout: float,
    max_connections: int,
    access_log: str | None,
) -> int:
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
    lines = [
        "premath mcp-serve",
        f"  transport: {transport}",
        f"  server: {server_name} {server_version}",
        f"  default issues path: {issues}",
        f"  issue query backend: {issue_query_backend}",
        f"  issue query projection: {issue_query_projection}",
        f"  mutation policy: {mutation_policy}",
        f"  default surface path: {surface}",
        f"  repo root: {repo_root}",
    ]
    sys.stderr.write("\n".join(lines) + "\n")
    sys.stderr.flush()
    backend = issue_query_backend.strip()
    if backend not in ("jsonl", "surreal"):
        raise InputInvalid(
            f"mcp server failed: invalid issue_query_backend `{backend}` "
            "(expected `jsonl` or `surreal`)"
        )
    policy = mutation_policy.strip()
    if policy not in ("open", "instruction-linked"):
        raise InputInvalid(
            f"mcp server failed: invalid mutation_policy `{policy}` "
            "(expected `open` or `instruction-linked`)"
        )
    max_age_s = _duration_s(witness_max_age)
    if observe and transport == "stdio":
        raise InvalidUsage(
            "--observe serves the dashboard over HTTP: add --transport streamable-http"
        )
    if live and not observe:
        raise InvalidUsage("--live rebuilds the surface the dashboard shows: add --observe")
    if public_url is not None and not observe:
        raise InvalidUsage("--public-url names the login links of the dashboard: add --observe")
    from premath.mcp.access_log import open_access_log
    from premath.mcp.server import CallLimits, serve  # lazy: the SDK loads only here
    from premath.mcp.tools import ServerConfig

    root = repo_root if os.path.isabs(repo_root) else os.path.join(os.getcwd(), repo_root)
    projection = issue_query_projection
    if not os.path.isabs(projection):
        projection = os.path.join(root, projection)
    config = ServerConfig(
        issues_path=issues,
        query_backend=backend,
        projection_path=projection,
        mutation_policy="open" if policy == "open" else "instruction-linked",
        surface_path=surface,
        repo_root=root,
        lock_timeout_s=app.lock_timeout(),
        allowed_paths=allow_path,
        witness_trust="reference" if witness_trust == "reference" else "mac",
        witness_max_age_s=max_age_s,
        witness_key_file=witness_key_file,
        trajectory_path=trajectory_path,
    )
    limits = CallLimits(call_timeout_s=call_timeout, run_timeout_s=instruction_run_timeout)
    if transport == "stdio":
        serve(config, server_name, server_version, limits, open_access_log(access_log))
        return 0
    from premath.mcp.http import serve_http
    from premath.web.serve import ObservationOptions
    from premath.web.server import ServerLimits, parse_bind, parse_public_url, tls_files
    from premath.web.tokens import resolve_tokens

    try:
        address = parse_bind(bind)
    except InputInvalid:
        raise InvalidUsage(
            f"--bind must be HOST:PORT with an IP address, [IPv6 address] or localhost as HOST "
            f"(e.g. 127.0.0.1:8765), got {bind!r}"
        ) from None
    tls = tls_files(tls_cert, tls_key)
    tokens, note = resolve_tokens(token_file, loopback=address.loopback, where=bind)
    if note:
        sys.stderr.write(f"  {note}\n")
    server_limits = ServerLimits(
        client_timeout_s=client_timeout,
        max_body_bytes=max_body_bytes,
        max_connections=max_connections,
        shutdown_grace_s=int(call_timeout) + 5,
    )
    observation = None
    if observe:
        observation = ObservationOptions(
            surface=surface,
            live=live,
            repo_root=repo_root,
            ciwitness_dir=ciwitness_dir,
            issues_path=os.path.abspath(issues),
            out_jsonl=out_jsonl,
            trajectory_path=trajectory_path,
            runs_dir=runs_dir,
        )
    serve_http(
        config,
        server_name,
        server_version,
        bind=address,
        tokens=tokens,
        limits=limits,
        server_limits=server_limits,
        log=open_access_log(access_log or "-"),
        tls=tls,
        observation=observation,
        public_url=parse_public_url(public_url),
    )
    return 0


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
