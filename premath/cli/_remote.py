"""The options of a loop whose issue memory is an MCP server (specs/remote-workers.md): where
the server is, the worker's token, the instruction its mutations cite, how long a lost server is
retried; for a worker that delivers git branches, the repository and its clone.

`RemoteChoice` carries the authority from click to the library: it opens the `McpAuthority` (the
MCP SDK loads only here, when `--mcp-url` is given). `DeliveryChoice` carries `--repo`, apart from
it: a worker on the issues file delivers through the merge queue as a remote one does, and both
prepare their `GitDelivery` through it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from premath.errors import InvalidUsage

F = TypeVar("F", bound=Callable[..., Any])
MCP_URL_ENV = "PREMATH_MCP_URL"
INSTRUCTION_ENV = "PREMATH_INSTRUCTION_ID"
HEARTBEAT_ENV = "PREMATH_WORKER_HEARTBEAT_SECONDS"
DEFAULT_RETRY_S = 120.0
DEFAULT_HEARTBEAT_S = 10.0


def checkout_root() -> str:
    """Where remote workers keep their clones by default: the node's temporary folder."""
    import tempfile

    return os.path.join(tempfile.gettempdir(), "premath-remote")


def authority_options(function: F) -> F:
    """`--mcp-url`, `--token-file`, `--instruction-id`, `--mcp-retry-seconds`."""
    for option in reversed(
        (
            click.option(
                "--mcp-url",
                envvar=MCP_URL_ENV,
                default=None,
                help="Claim through the MCP server at this URL (http://HOST:PORT/mcp), not the "
                "issues file [env PREMATH_MCP_URL]",
            ),
            click.option(
                "--token-file",
                default=None,
                help="Bearer tokens for --mcp-url: `<id> <token>` lines, mode 0600; the line "
                "named after the worker, else the one its id falls under (`fleet` for "
                "`fleet.2`), else the first [env PREMATH_MCP_TOKEN: one token]",
            ),
            click.option(
                "--instruction-id",
                envvar=INSTRUCTION_ENV,
                default=None,
                help="Instruction witness every mutation cites (the server's default "
                "policy needs one) [env PREMATH_INSTRUCTION_ID]",
            ),
            click.option(
                "--mcp-retry-seconds",
                type=click.FloatRange(min=0.0),
                default=DEFAULT_RETRY_S,
                show_default=True,
                help="How long an unreachable MCP server is retried before the worker gives up",
            ),
        )
    ):
        function = option(function)
    return function


def delivery_options(function: F) -> F:
    """`--repo`, `--base-ref`, `--integration-branch`, `--land`, `--checkout-dir`."""
    for option in reversed(
        (
            click.option(
                "--repo",
                default=None,
                help="Clone this repository (URL or path), work in the clone, push each "
                "verified issue to its branch premath/<issue id>, land it on the integration "
                "branch through the merge queue",
            ),
            click.option(
                "--base-ref",
                default=None,
                help="Branch each issue's work starts from [default: the remote's HEAD]",
            ),
            click.option(
                "--integration-branch",
                default=None,
                help="Branch the merge queue lands verified work on, created from the base on "
                "first use; each issue starts from it [default: premath/integration]",
            ),
            click.option(
                "--land",
                is_flag=True,
                default=None,
                help="After each verified merge, fast-forward the base branch to the "
                "integration head (without it the base branch is never touched)",
            ),
            click.option(
                "--checkout-dir",
                default=None,
                help="Folder of remote workers' clones and records (with --mcp-url; a worker "
                "on the issues file keeps its clone in --worktree-root) [default: "
                "<temp folder>/premath-remote]",
            ),
        )
    ):
        function = option(function)
    return function


@dataclass(frozen=True, slots=True)
class RemoteChoice:
    """A remote authority: the MCP server a worker claims through."""

    mcp_url: str
    token_file: str | None
    instruction_id: str | None
    retry_s: float
    heartbeat_s: float = DEFAULT_HEARTBEAT_S
    """How often a worker heartbeats to the authority (specs/remote-workers.md "Workers")."""

    def tokens(self) -> list[tuple[str, str]]:
        from premath.web.tokens import client_tokens

        return client_tokens(self.token_file)

    def token_for(self, worker_id: str) -> str:
        return pick_token(self.tokens(), worker_id)

    @contextmanager
    def authority(self, token: str, report: Callable[[str], None]) -> Iterator[Any]:
        """The connected `McpAuthority` (a wrong URL or token fails here, before any claim)."""
        from premath.mcp.remote import McpAuthority

        with McpAuthority(
            self.mcp_url,
            token,
            instruction_id=self.instruction_id,
            retry_s=self.retry_s,
            report=report,
        ) as memory:
            memory.connect()
            yield memory

    def presence(
        self, memory: Any, worker_id: str, node: str, report: Callable[[str], None]
    ) -> Any:
        """The worker's `McpPresence` at `memory` (registers when the loop starts)."""
        from premath.mcp.presence import McpPresence

        return McpPresence(
            memory, worker_id, node=node, heartbeat_s=self.heartbeat_s, report=report
        )


@dataclass(frozen=True, slots=True)
class DeliveryChoice:
    """A repository to deliver to through the merge queue (`--repo`), whoever the authority
    is: the MCP server (a remote worker) or the issues file (the local coordinator's workers)."""

    repo: str
    base_ref: str | None = None
    integration_branch: str | None = None
    land: bool | None = None
    checkout_dir: str | None = None

    def home(self, worker_id: str) -> str:
        """A remote worker's own folder: its clone (`repo/`) and its loop records (`.premath/`)."""
        return os.path.join(os.path.abspath(self.checkout_dir or checkout_root()), worker_id)

    def prepare(self, home: str, worker_id: str, report: Callable[[str], None]) -> Any:
        """The worker's `GitDelivery` in `home`, its clone and merge queue prepared."""
        from premath.harness.delivery import GitDelivery
        from premath.harness.merge_queue import DEFAULT_INTEGRATION_BRANCH, MergeQueue

        delivery = GitDelivery(self.repo, home, worker_id, self.base_ref)
        delivery.prepare(report)
        queue = MergeQueue(delivery, self.integration_branch or DEFAULT_INTEGRATION_BRANCH)
        queue.prepare(land=bool(self.land))
        return delivery

    def argv(self) -> list[str]:
        """The choice spelled back for a worker process (the local coordinator's workers)."""
        argv = ["--repo", self.repo]
        for flag, value in (
            ("--base-ref", self.base_ref),
            ("--integration-branch", self.integration_branch),
        ):
            argv += [flag, value] if value is not None else []
        return [*argv, "--land"] if self.land else argv


def pop_remote(options: dict[str, Any]) -> RemoteChoice | None:
    """The remote authority from the options (consumed); None for the issues file.
    `--token-file` without `--mcp-url` is a usage error."""
    url = options.pop("mcp_url")
    token_file = options.pop("token_file")
    instruction_id = options.pop("instruction_id")
    retry_s = options.pop("mcp_retry_seconds")
    if url is None:
        if token_file is not None:
            raise InvalidUsage("--token-file needs --mcp-url (the MCP server to claim through)")
        return None
    if not url.startswith(("http://", "https://")):
        raise InvalidUsage(f"--mcp-url must be an http:// or https:// URL (got {url!r})")
    return RemoteChoice(url, token_file, instruction_id, retry_s, heartbeat_s=heartbeat_seconds())


def pop_delivery(options: dict[str, Any]) -> DeliveryChoice | None:
    """The delivery choice from the options (consumed); None without `--repo`, whose
    companions without it are a usage error."""
    names = ("repo", "base_ref", "integration_branch", "land", "checkout_dir")
    given = {name: options.pop(name, None) for name in names}
    repo = given.pop("repo")
    if repo is None:
        if any(value is not None for value in given.values()):
            raise InvalidUsage(
                "--base-ref, --integration-branch, --land and --checkout-dir need --repo"
            )
        return None
    if "://" not in repo and os.path.exists(repo):
        repo = os.path.abspath(repo)  # the same folder wherever a worker runs
    return DeliveryChoice(repo, **given)


def heartbeat_seconds() -> float:
    """PREMATH_WORKER_HEARTBEAT_SECONDS (at least 1), else every 10 s."""
    raw = os.environ.get(HEARTBEAT_ENV, "").strip()
    try:
        value = float(raw) if raw else DEFAULT_HEARTBEAT_S
    except ValueError:
        value = 0.0
    if not 1.0 <= value <= 3600.0:
        raise InvalidUsage(
            f"{HEARTBEAT_ENV} must be a number of seconds from 1 to 3600 (got {raw!r})"
        )
    return value


def pick_token(tokens: list[tuple[str, str]], worker_id: str) -> str:
    """The token of the line named after the worker, else of the longest line whose id the
    worker's falls under (`fleet` for `fleet.2`: the token that may act as it,
    specs/remote-workers.md "Worker identity"), else of the first line."""
    for name, token in tokens:
        if name == worker_id:
            return token
    owners = [(len(name), token) for name, token in tokens if worker_id.startswith(name + ".")]
    return max(owners)[1] if owners else tokens[0][1]


@dataclass(frozen=True, slots=True)
class FleetOpener:
    """How a fleet worker on its node connects to the authority and prepares its clone (the
    `WorkerOpener` of premath.harness.fleet; pickled to the nodes by Ray). It carries the
    tokens read on the coordinator's machine (the token file need not exist on the nodes); Ray
    keeps them in its task arguments, inside the cluster's own authentication."""

    remote: RemoteChoice
    delivery: DeliveryChoice
    tokens: tuple[tuple[str, str], ...]

    @contextmanager
    def __call__(self, worker_id: str, node: str, report: Callable[[str], None]) -> Iterator[Any]:
        token = pick_token(list(self.tokens), worker_id)
        with self.remote.authority(token, report) as memory:
            presence = self.remote.presence(memory, worker_id, node, report)
            delivery = self.delivery.prepare(self.delivery.home(worker_id), worker_id, report)
            yield memory, delivery, presence
