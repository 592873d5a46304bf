"""Path arguments of host calls: no shell, no network, nothing outside the repository root.

The evaluator denies direct effects (`shell.`, `network.`, ...); a path argument must not be a
way around that. Before any host action opens a path a program names, the path is refused when
it names a network location (a URL, bash's `/dev/tcp` and `/dev/udp`) or a shell (a pipe
`|cmd` or `cmd|`, a command substitution) as `scheme_eval.effect_denied`; when it resolves
(symlinks followed) outside the repository root as `path.outside_root`; and when it exists but
is not a regular file (a FIFO, a device, a folder where a file is meant) as
`path.not_regular_file`, so no call can block on a FIFO or read `/dev/zero`.
Divergence D24-3: the reference opens whatever path a program names.

The root and file-kind checks are the MCP server's own (`store/confine.py`, D22-1).
"""

from __future__ import annotations

import re

from premath.harness.host.args import HostActionFailed

EFFECT_DENIED = "scheme_eval.effect_denied"
_NETWORK = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://|^/dev/(tcp|udp)/")
_SHELL = re.compile(r"^\s*\||\|\s*$|\$\(|`")


def refuse_effects(action: str, field: str, path: str) -> None:
    """`scheme_eval.effect_denied` for a path that names a network location or a shell."""
    if _NETWORK.search(path):
        raise HostActionFailed(
            EFFECT_DENIED,
            f"direct effect denied in evaluator profile: {action} {field} `{path}` names a "
            "network location",
        )
    if _SHELL.search(path):
        raise HostActionFailed(
            EFFECT_DENIED,
            f"direct effect denied in evaluator profile: {action} {field} `{path}` names a shell "
            "command",
        )


def confined_path(action: str, field: str, path: str, repo_root: str) -> str:
    """`path` as given, once it is a plain file path inside `repo_root` (module doc)."""
    from premath.errors import RuleRefused
    from premath.store.confine import PathRoots, confine

    refuse_effects(action, field, path)
    try:
        return confine(PathRoots.of(repo_root), f"{action} {field}", path)
    except RuleRefused as refused:
        raise HostActionFailed.from_rule(refused) from None
