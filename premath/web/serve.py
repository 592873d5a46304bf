"""`premath observe-serve`: bind, announce, serve the observation piece until stopped.

The banner is the reference's (observation.md §7.1), printed once the socket is bound so it
shows the port actually taken (`--bind 127.0.0.1:0`), plus a `dashboard:` line; a bind that is
not loopback is said aloud on stderr (divergence D21-9).
"""

from dataclasses import dataclass
from typing import TextIO

from premath.clock import Clock
from premath.errors import IoFailure
from premath.observe.builder import BuildPaths, rust_join
from premath.observe.dashboard import DashboardSources
from premath.store.documents import os_error_text
from premath.web.observation import LOOPBACK_HOSTS, ROUTES, ObservationConfig, ObservationService
from premath.web.server import ServerLimits, bind_socket, parse_bind, serve


@dataclass(frozen=True)
class ServeOptions:
    surface: str
    bind: str
    live: bool = False
    repo_root: str = "."
    ciwitness_dir: str = "artifacts/ciwitness"
    issues_path: str = ".premath/issues.jsonl"
    out_jsonl: str = "artifacts/observation/events.jsonl"
    trajectory_path: str = ".premath/harness_trajectory.jsonl"
    runs_dir: str = ".premath/runs"
    header_timeout_s: float = ServerLimits.header_timeout_s

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


def banner(options: ServeOptions, address: str) -> str:
    lines = [
        "premath observe-serve",
        f"  bind: {address}",
        f"  surface: {options.surface}",
        "  routes:",
        *(f"    GET {route}" for route in ROUTES),
        f"  dashboard: http://{address}/dashboard"
        + ("" if options.live else " (issues, trajectory, KPI and runs need --live)"),
    ]
    return "\n".join(lines) + "\n"


def serve_observation(options: ServeOptions, clock: Clock, *, out: TextIO, err: TextIO) -> None:
    """Bind (InputInvalid for a bad --bind, IoFailure when binding fails), announce, serve."""
    bind = parse_bind(options.bind)
    try:
        sock = bind_socket(bind)
    except OSError as exc:
        raise IoFailure(f"observation API failed: bind failed: {os_error_text(exc)}") from None
    address = bind.display(sock.getsockname()[1])
    config = ObservationConfig(
        options.sources(),
        clock,
        allowed_hosts=LOOPBACK_HOSTS if bind.loopback else None,
    )
    try:
        service = ObservationService(config)
        service.refresh()
        if not bind.loopback:
            err.write(
                f"warning: observe-serve listens on {address}, reachable from other machines; "
                "it has no authentication and serves issue titles, leases and run files to "
                "anyone who can connect (bind 127.0.0.1 to keep it local)\n"
            )
            err.flush()
        out.write(banner(options, address))
        out.flush()
        serve(service.app(), sock, ServerLimits(header_timeout_s=options.header_timeout_s))
    finally:
        sock.close()
