"""Deny rules for unattended runs, matched against a command's argv.

Benchmark mode grants full access, so the only brake is an explicit deny rule. A rule matches by
argv prefix (the first token also matches by its basename, so `rm` denies `/bin/rm`) or by an
fnmatch glob over the shlex-joined line (`*rm -rf*` also catches `bash -c 'rm -rf /'`).
specs/bench-run.md "Deny rules".
"""

import fnmatch
import os
import shlex
from collections.abc import Sequence
from typing import Protocol


class DenyRuleLike(Protocol):
    """A checked deny rule: `models.bench.DenyRule` or `models.bench_policy.DenyRuleSpec`."""

    @property
    def argv_prefix(self) -> Sequence[str] | None: ...
    @property
    def glob(self) -> str | None: ...
    def describe(self) -> str: ...


def _prefix_matches(prefix: Sequence[str], argv: Sequence[str]) -> bool:
    if len(argv) < len(prefix):
        return False
    first, wanted = argv[0], prefix[0]
    if first != wanted and os.path.basename(first) != wanted:
        return False
    return list(argv[1 : len(prefix)]) == list(prefix[1:])


def matching_rule(
    rules: Sequence[DenyRuleLike], argv: Sequence[str]
) -> tuple[int, DenyRuleLike] | None:
    """The first deny rule (index, rule) that refuses `argv`, or None."""
    line = shlex.join(argv)
    for index, rule in enumerate(rules):
        if rule.argv_prefix is not None and _prefix_matches(rule.argv_prefix, argv):
            return index, rule
        if rule.glob is not None and fnmatch.fnmatchcase(line, rule.glob):
            return index, rule
    return None
