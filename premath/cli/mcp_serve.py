"""`premath mcp-serve`: the issue memory and transport as MCP tools over stdio (premath/mcp)."""

import os
import sys

import click

from premath.cli._options import PROJECT_ROOT, json_option, project_path_option
from premath.cli._root import CONTEXT_SETTINGS, AppContext, StrictCommand, pass_app
from premath.errors import InputInvalid


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
    help="Default observation surface",
)
@click.option(
    "--repo-root",
    help=f"Repository root: instruction witnesses, the projection cache [default: {PROJECT_ROOT}]",
)
@click.option("--server-name", default="premath-mcp", show_default=True, help="serverInfo.name")
@click.option("--server-version", default="0.1.0", show_default=True, help="serverInfo.version")
@json_option
@pass_app
def mcp_serve(
    app: AppContext,
    issues: str,
    issue_query_backend: str,
    issue_query_projection: str,
    mutation_policy: str,
    surface: str,
    repo_root: str | None,
    server_name: str,
    server_version: str,
) -> int:
    """Serve the issue and dependency tools over MCP. Over stdio, as newline-delimited JSON-RPC.

    With --json, a start-up error is also printed as a JSON error document on stdout.

    \b
    premath mcp-serve --issues .premath/issues.jsonl
    """
    if repo_root is None:
        from premath.store.root import discover_root

        repo_root = discover_root()
    lines = [
        "premath mcp-serve",
        "  transport: stdio",
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
    from premath.mcp.server import serve  # lazy: the SDK loads only here
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
    )
    serve(config, server_name, server_version)
    return 0
