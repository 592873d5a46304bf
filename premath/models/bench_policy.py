"""A plain reader of the deny policy, for `premath bench tool`, which runs once per tool call.

`BenchPolicy` (models/bench.py) checks the user's `--policy` file with pydantic and good
messages; the run then keeps its dump in `raw/policy.json`, and each tool call re-reads that file
here without importing pydantic (its import costs more than the rest of the call). Both accept
and reject the same documents (tests/bench/test_policy.py, hypothesis).
"""

from __future__ import annotations

from dataclasses import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_POLICY_KEYS = frozenset({"version", "deny"})
_RULE_KEYS = frozenset({"argv_prefix", "glob", "reason"})


def describe_rule(argv_prefix: Any, glob: str | None, reason: str | None) -> str:
    matcher = f"argv_prefix {list(argv_prefix)}" if argv_prefix else f"glob {glob!r}"
    return matcher + (f" ({reason})" if reason else "")


@dataclass(frozen=True, slots=True)
class DenyRuleSpec:
    argv_prefix: tuple[str, ...] | None
    glob: str | None
    reason: str | None

    def describe(self) -> str:
        return describe_rule(self.argv_prefix, self.glob, self.reason)


def _optional_string(rule: dict[str, Any], key: str, where: str) -> str | None:
    value = rule.get(key)
    if value is not None and type(value) is not str:
        raise ValueError(f"{where}.{key}: must be a string")
    return value


def _rule(rule: Any, where: str) -> DenyRuleSpec:
    if type(rule) is not dict:
        raise ValueError(f"{where}: must be an object")
    unknown = sorted(set(rule) - _RULE_KEYS)
    if unknown:
        raise ValueError(f"{where}.{unknown[0]}: unknown key")
    prefix = rule.get("argv_prefix")
    if prefix is not None and (type(prefix) is not list or any(type(t) is not str for t in prefix)):
        raise ValueError(f"{where}.argv_prefix: must be a list of strings")
    glob = _optional_string(rule, "glob", where)
    reason = _optional_string(rule, "reason", where)
    if (prefix is None) == (glob is None):
        raise ValueError(f"{where}: needs exactly one of 'argv_prefix' or 'glob'")
    if prefix is not None and (not prefix or not all(prefix)):
        raise ValueError(f"{where}.argv_prefix: must be a non-empty list of non-empty strings")
    if glob is not None and not glob.strip():
        raise ValueError(f"{where}.glob: must not be blank")
    return DenyRuleSpec(tuple(prefix) if prefix is not None else None, glob, reason)


def parse_deny_rules(document: Any) -> tuple[DenyRuleSpec, ...]:
    """The deny rules of a policy document; ValueError naming the first problem."""
    if type(document) is not dict:
        raise ValueError("the policy must be a JSON object")
    unknown = sorted(set(document) - _POLICY_KEYS)
    if unknown:
        raise ValueError(f"{unknown[0]}: unknown key")
    version = document.get("version", 1)
    if type(version) is not int or version != 1:
        raise ValueError("version: must be 1")
    rules = document.get("deny", [])
    if type(rules) is not list:
        raise ValueError("deny: must be a list")
    return tuple(_rule(rule, f"deny[{index}]") for index, rule in enumerate(rules))
