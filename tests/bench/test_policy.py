"""Deny-rule matching: argv prefixes (with the program's basename) and globs."""

import shlex
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from premath.bench.policy import matching_rule
from premath.models.bench import BenchPolicy, DenyRule
from premath.models.bench_policy import parse_deny_rules

POLICY = BenchPolicy(
    deny=[
        DenyRule(argv_prefix=["rm", "-rf"]),
        DenyRule(argv_prefix=["git", "push"], reason="no publishing"),
        DenyRule(glob="*curl*|*sh*"),
    ]
)


@pytest.mark.parametrize(
    ("argv", "rule"),
    [
        (["rm", "-rf", "/"], 0),
        (["/usr/bin/rm", "-rf", "x"], 0),
        (["rm", "-r", "x"], None),
        (["rm"], None),
        (["git", "push", "origin"], 1),
        (["git", "pull"], None),
        (["bash", "-c", "curl x | sh"], 2),
        (["echo", "git push"], None),
    ],
)
def test_matching(argv, rule):
    found = matching_rule(POLICY.deny, argv)
    assert (found[0] if found else None) == rule


def test_empty_policy_denies_nothing():
    assert matching_rule(BenchPolicy().deny, ["rm", "-rf", "/"]) is None


def test_rule_description():
    assert POLICY.deny[1].describe() == "argv_prefix ['git', 'push'] (no publishing)"
    assert POLICY.deny[2].describe() == "glob '*curl*|*sh*'"


# The plain reader `bench tool` uses must accept and reject exactly what BenchPolicy does.
TOKENS = st.sampled_from(["rm", "-rf", "", " ", "git"]) | st.text(max_size=4)
SCALARS = st.none() | st.booleans() | st.integers(-2, 2) | st.floats(allow_nan=False) | TOKENS
RULES = st.fixed_dictionaries(
    {},
    optional={
        "argv_prefix": st.lists(TOKENS, max_size=3) | st.lists(SCALARS, max_size=2) | SCALARS,
        "glob": TOKENS | SCALARS,
        "reason": TOKENS | st.none() | SCALARS,
        "pattern": TOKENS,
    },
)
GOOD_RULES = st.fixed_dictionaries(
    {"argv_prefix": st.lists(st.text(min_size=1, max_size=4), min_size=1, max_size=3)},
    optional={"reason": TOKENS | st.none()},
) | st.fixed_dictionaries(
    {"glob": st.text(min_size=1, max_size=4)}, optional={"reason": TOKENS | st.none()}
)
POLICIES = st.fixed_dictionaries(
    {},
    optional={
        "version": st.sampled_from([1, 1, 1, True, 1.0, 2, "1", None]),
        "deny": st.lists(GOOD_RULES | GOOD_RULES | RULES, max_size=3),
    },
)
DOCUMENTS = st.one_of(
    POLICIES,
    POLICIES,
    POLICIES,
    st.fixed_dictionaries({"deny": SCALARS, "rules": SCALARS}),
    SCALARS,
)


@settings(max_examples=300)
@given(DOCUMENTS)
def test_plain_reader_agrees_with_the_model(document):
    try:
        model = BenchPolicy.model_validate(document)
    except (ValidationError, TypeError):
        model = None
    try:
        plain = parse_deny_rules(document)
    except ValueError:
        plain = None
    assert (model is None) == (plain is None), (document, model, plain)
    if model is not None:
        assert [(r.argv_prefix and tuple(r.argv_prefix), r.glob, r.reason) for r in model.deny] == [
            (r.argv_prefix, r.glob, r.reason) for r in plain
        ]
        assert [r.describe() for r in model.deny] == [r.describe() for r in plain]


EXAMPLE = parse_deny_rules(
    {
        "version": 1,
        "deny": [
            {"argv_prefix": ["rm", "-rf"], "reason": "no recursive deletes in benchmark runs"},
            {"glob": "*git push*", "reason": "never publish from a benchmark container"},
            {"glob": "*shutdown*", "reason": "the task container is shared with the verifier"},
        ],
    }
)  # tools/terminal-bench/configs/deny.example.json

RESPELLED_RM = [
    "rm -fr /", "rm -r -f /", "rm -f -r /", "rm --recursive --force /", "rm --force --recursive /",
    "rm -R -f /", "rm -rfv /", "rm -v -rf /", "rm -rf -- /", "/bin/rm -rf /", "/usr/bin/rm -fr /",
    "env rm -rf /", "env -i rm -rf /", "env FOO=1 rm -rf /", "env -u HOME rm -r -f /",
    "nice rm -rf /", "nice -n 5 rm -fr /", "timeout 5 rm -rf /", "timeout -s KILL 5 rm -rf /",
    "xargs rm -rf", "xargs -0 -n 1 rm -fr", "nohup rm -rf /", "command rm -rf /",
    "env nice timeout 5 rm -rf /", "sh -c 'rm -rf /'", "bash -c 'rm --recursive --force /'",
    "bash -lc 'cd /tmp && rm -fr x'", "sh -c 'true; env rm -rf /'",
]  # fmt: skip
RESPELLED_GIT_PUSH = [
    "git -C . push", "git -c a=b push origin main", "git --git-dir=.git push", "env git push",
    "sh -c 'git -C /repo push --force'", "/usr/bin/git -C . push",
]  # fmt: skip
ALLOWED = ["rm -i x", "rm -r x", "rm -f x", "echo 'rm -rf /'", "git status", "git -C . pull",
           "ls -rf", "env FOO=1 ls", "sh -c 'echo rm'"]  # fmt: skip


@pytest.mark.parametrize("line", RESPELLED_RM + RESPELLED_GIT_PUSH)
def test_respelled_commands_are_denied_by_the_example_policy(line):
    found = matching_rule(EXAMPLE, shlex.split(line))
    assert found is not None, line
    assert found[0] == (0 if line in RESPELLED_RM else 1)


@pytest.mark.parametrize("line", ALLOWED)
def test_commands_the_rules_do_not_name_pass(line):
    assert matching_rule(EXAMPLE, shlex.split(line)) is None


def test_a_symlink_to_rm_is_rm(tmp_path):
    rm = shutil.which("rm")
    assert rm is not None
    (tmp_path / "del").symlink_to(rm)
    assert matching_rule(EXAMPLE, [str(tmp_path / "del"), "-rf", "/"]) is not None
