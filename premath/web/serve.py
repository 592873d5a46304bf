"""`premath observe-serve`: bind, announce, serve the observation piece until stopped; and the
observation options `mcp-serve --observe` shares.

The banner is the reference's (observation.md §7.1), printed once the socket is bound so it
shows the port actually taken (`--bind 127.0.0.1:0`), plus a `dashboard:` line (and, with
`--token-file`, a `login:` line before it); a bind that is not loopback is said aloud on
stderr (divergence D21-9). Without `--token-file` nothing asks for a token, as in the
reference; with one, every route but `/healthz` and the login pages needs the token or a
browser session (D21-15).
"""

from __future__ import annotations

from dataclasses import dataclass

from premath.errors import IoFailure
from premath.observe.builder import BuildPaths, rust_join
from premath.observe.dashboard import DashboardSources
from premath.store.documents import os_error_text
from premath.web.app import http_app
from premath.web.auth import LOOPBACK_HOSTS, people_access
from premath.web.observation import ROUTES, ObservationConfig, ObservationService
from premath.web.server import (
    BindAddress,
    Listening,
    ServerLimits,
    TlsFiles,
    bind_socket,
    exposure_warning,
    parse_bind,
    serve,
)
from premath.web.tokens import load_token_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO

    from premath.clock import Clock


@dataclass(frozen=True)
class ObservationOptions:
    """What the observation piece serves: `observe-serve`'s flags, and `mcp-serve --observe`'s."""

    surface: str
    live: bool = False
    repo_root: str = "."
    ciwitness_dir: str = "artifacts/ciwitness"
    issues_path: str = ".premath/issues.jsonl"
    """Relative to the repo root (an absolute path is kept)."""
    out_jsonl: str = "artifacts/observation/events.jsonl"
    trajectory_path: str = ".premath/harness_trajectory.jsonl"
    runs_dir: str = ".premath/runs"

    def sources(self) -> DashboardSources:
        if not self.live:
            return DashboardSources(self.surface)
        paths = BuildPaths.resolve(
            self.repo_root, self.ciwitness_dir, self.issues_path, self.surface, self.out_jsonl
        )
        return DashboardSources(
            self.surface,
            live=paths,
            trajectory_path=rust_join(paths.repo_root, self.trajectory_path),
            runs_dir=rust_join(paths.repo_root, self.runs_dir),
        )

    def service(self, clock: Clock, bind: BindAddress, command: str) -> ObservationService:
        """The piece for a server on `bind`, its dashboard current before the first request."""
        config = ObservationConfig(
            self.sources(),
            clock,
            allowed_hosts=LOOPBACK_HOSTS if bind.loopback else None,
            command=command,
        )
        service = ObservationService(config)
        service.refresh()
        return service


@dataclass(frozen=True)
class ServeOptions:
    observation: ObservationOptions
    bind: str
    client_timeout_s: float = ServerLimits.client_timeout_s
    token_file: str | None = None
    tls: TlsFiles | None = None
    public_url: str | None = None
    """Where people reach the server: login links start with it (parse_public_url)."""


def banner(options: ServeOptions, listening: Listening, login: str | None) -> str:
    live = options.observation.live
    lines = [
        "premath observe-serve",
        f"  bind: {listening.address}",
        f"  surface: {options.observation.surface}",
        "  routes:",
        *(f"    GET {route}" for route in ROUTES),
        *([login] if login else []),
        f"  dashboard: {listening.base}/dashboard"
        + ("" if live else " (issues, trajectory, KPI and runs need --live)"),
    ]
    return "\n".join(lines) + "\n"


def serve_observation(options: ServeOptions, clock: Clock, *, out: TextIO, err: TextIO) -> None:
    """Bind (InputInvalid for a bad --bind, IoFailure when binding fails), announce, serve."""
    bind = parse_bind(options.bind)
    tokens = None if options.token_file is None else load_token_file(options.token_file)
    try:
        sock = bind_socket(bind)
    except OSError as exc:
        raise IoFailure(f"observation API failed: bind failed: {os_error_text(exc)}") from None
    try:
        listening = Listening(bind, sock.getsockname()[1], options.tls)
        service = options.observation.service(clock, bind, "observe-serve")
        access, login = None, None
        if tokens is not None:
            access, login = people_access(
                tokens,
                "observe-serve",
                listening,
                public_paths=frozenset({"/healthz"}),
                public_url=options.public_url,
            )
        limits = ServerLimits(client_timeout_s=options.client_timeout_s)
        app = http_app(service.routes(), limits, lifespans=[service.lifespan], access=access)
        warning = exposure_warning("observe-serve", listening, authenticated=access is not None)
        if warning:
            err.write(warning + "\n")
            err.flush()
        out.write(banner(options, listening, login))
        out.flush()
        serve(app, sock, limits, name="observe-serve", tls=options.tls)
    finally:
        sock.close()
