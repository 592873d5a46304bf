"""Error classes a caller can act on; the CLI's one exit point maps them to exit codes."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import ClassVar, Literal

    ErrorCode = Literal[
        "usage_error",
        "not_found",
        "artifact_invalid",
        "input_invalid",
        "lock_busy",
        "io_error",
        "internal_error",
        "conflict",
        "lease_refused",
        "policy_denied",
        "interrupted",
        "authority_unreachable",
        "authority_refused",
    ]


class PremathError(Exception):
    """A failure the user can fix; its message is printed as `error: <message>`."""

    code: ClassVar[ErrorCode] = "internal_error"
    exit_code: ClassVar[int] = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(PremathError):
    """A file or record the command needs does not exist."""

    code = "not_found"


class ArtifactInvalid(PremathError):
    """A stored artifact cannot be parsed or fails validation; it is left untouched."""

    code = "artifact_invalid"


class InputInvalid(PremathError):
    """A value the user passed is rejected after parsing (the reference's runtime checks)."""

    code = "input_invalid"


class InvalidUsage(PremathError):
    """Input the reference rejects as a usage error (exit 2), raised from library code."""

    code = "usage_error"
    exit_code = 2


class LockBusy(PremathError):
    """Another process held a lock past our timeout."""

    code = "lock_busy"


class IoFailure(PremathError):
    """The operating system refused a read or a write."""

    code = "io_error"


class Conflict(PremathError):
    """The store changed in a way that makes the request impossible (duplicate id, cycle...)."""

    code = "conflict"


class LeaseRefused(PremathError):
    """A lease operation by someone who does not hold the lease, or on a stale lease."""

    code = "lease_refused"


class PolicyDenied(PremathError):
    """A deny rule refused a command; it was recorded and not run (specs/bench-run.md)."""

    code = "policy_denied"


class Interrupted(PremathError):
    """Ctrl-C or SIGTERM stopped a long command; what it recorded is kept and can be resumed."""

    code = "interrupted"


class RuleRefused(PolicyDenied):
    """A boundary rule refused a request (a path outside the roots, an unverified witness);
    the message starts with `[failureClass=<rule>]`, as tool errors tagged with a class do."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(f"[failureClass={rule}] {message}")
        self.rule = rule


class AuthorityUnreachable(PremathError):
    """Issue memory's remote authority (the MCP server) could not be reached within the
    worker's bound; nothing was changed on its behalf (specs/remote-workers.md)."""

    code = "authority_unreachable"


class AuthorityRefused(PremathError):
    """The remote authority answered but refused us for good: a wrong token, a URL that is not
    an MCP endpoint. Retrying does not help; the message says what to fix."""

    code = "authority_refused"
