"""Deny rules for unattended runs, matched against a command's argv after normalising it.

Benchmark mode grants full access, so the only brake is an explicit deny rule. The rules are a
guardrail for a cooperating agent that respells a command by accident or habit, not isolation
from a hostile one (a script file, `$(...)`, an interpreter or a copied binary still get past;
isolation is the docker executor's job). specs/bench-run.md "Deny rules".

Before matching, a command is normalised:
- wrappers are peeled: `env` (options, `NAME=VALUE`), `nice`, `timeout`, `nohup`, `xargs`,
  `stdbuf`, `setsid`, `command`, `exec`, `time`, `sudo`, and `sh -c`/`bash -c` scripts, whose
  text is split into its commands (`;`, `&&`, `||`, `|`, `&`); each command found is checked;
- the program is named by its basename and by the basename of the file it resolves to through
  PATH and symlinks (`./del` linked to `/bin/rm` is `rm`);
- git's global options (`-C DIR`, `-c K=V`, `--git-dir=...`) are dropped (`git -C . push`);
- options are compared as a set: short clusters split (`-fr` is `-f -r`), the long spellings of
  `rm`, `cp`, `chmod`, `chown` and `git push` mapped to their short letters (`--recursive` is
  `-r`), and `--` ends options.
An `argv_prefix` rule matches when the program matches, its options are a subset of the
command's, and its other tokens start the command's positional arguments. A `glob` rule is
matched (fnmatch, case-sensitive) against the original line and against each command found,
with its program as written and as resolved.
"""

from __future__ import annotations

import fnmatch
import os
import shlex
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol


class DenyRuleLike(Protocol):
    """A checked deny rule: `models.bench.DenyRule` or `models.bench_policy.DenyRuleSpec`."""

    @property
    def argv_prefix(self) -> Sequence[str] | None: ...
    @property
    def glob(self) -> str | None: ...
    def describe(self) -> str: ...


_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "busybox"})
_VALUE_OPTIONS: dict[str, frozenset[str]] = {
    "env": frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "timeout": frozenset({"-s", "--signal", "-k", "--kill-after"}),
    "xargs": frozenset(
        {
            "-a",
            "--arg-file",
            "-d",
            "--delimiter",
            "-E",
            "-e",
            "--eof",
            "-I",
            "-i",
            "--replace",
            "-L",
            "-l",
            "--max-lines",
            "-n",
            "--max-args",
            "-P",
            "--max-procs",
            "-s",
            "--max-chars",
            "--process-slot-var",
        }
    ),
    "stdbuf": frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}),
    "sudo": frozenset({"-u", "--user", "-g", "--group", "-C", "-D", "--chdir", "-h", "--host"}),
    "nohup": frozenset(),
    "setsid": frozenset(),
    "command": frozenset(),
    "exec": frozenset({"-a"}),
    "time": frozenset({"-f", "--format", "-o", "--output"}),
}
_GIT_GLOBAL_VALUE = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace"})
_LONG_TO_SHORT: dict[str, dict[str, str]] = {
    "rm": {"recursive": "r", "force": "f", "R": "r", "dir": "d"},
    "cp": {"recursive": "r", "force": "f", "R": "r"},
    "chmod": {"recursive": "R"},
    "chown": {"recursive": "R"},
    "git": {"force": "f"},
}
_SEPARATORS = frozenset({";", "&&", "||", "|", "&", "|&", ";;", "(", ")", "\n"})
_MAX_UNWRAP = 16
"""Wrappers inside wrappers deeper than this are not followed (a guardrail, not a parser)."""


def _program_names(program: str) -> frozenset[str]:
    """The program's basename, and the basename of the file it resolves to (PATH, symlinks)."""
    names = {os.path.basename(program)}
    found = program if os.sep in program else shutil.which(program)
    if found:
        names.add(os.path.basename(os.path.realpath(found)))
    return frozenset(names)


def _skip_options(argv: Sequence[str], start: int, with_value: frozenset[str]) -> int:
    """The index of the first argument after the wrapper's options."""
    index = start
    while index < len(argv):
        token = argv[index]
        if token == "--":
            return index + 1
        if not token.startswith("-") or token == "-":
            return index
        name = token.split("=", 1)[0]
        index += 2 if name in with_value and "=" not in token else 1
    return index


def _shell_script(argv: Sequence[str]) -> str | None:
    """The script of `sh -c SCRIPT` (also `-lc`, `-ec`, `-o pipefail -c`), else None."""
    for index in range(1, len(argv) - 1):
        token = argv[index]
        if token.startswith("-") and not token.startswith("--") and "c" in token[1:]:
            return argv[index + 1]
        if not token.startswith(("-", "+")) and argv[index - 1] not in ("-o", "+o"):
            return None
    return None


def _split_script(script: str) -> Iterator[list[str]]:
    lexer = shlex.shlex(script, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    command: list[str] = []
    try:
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: check the words we can see
        tokens = script.split()
    for token in tokens:
        if token in _SEPARATORS or set(token) <= set(";&|()"):
            if command:
                yield command
            command = []
        else:
            command.append(token)
    if command:
        yield command


def commands_in(argv: Sequence[str], depth: int = 0) -> Iterator[list[str]]:
    """`argv` and every command it wraps (wrappers peeled, shell scripts split)."""
    if not argv:
        return
    yield list(argv)
    if depth >= _MAX_UNWRAP:
        return
    names = _program_names(argv[0])
    if names & _SHELLS:
        script = _shell_script(argv)
        if script is not None:
            for command in _split_script(script):
                yield from commands_in(command, depth + 1)
        return
    wrapper = next((name for name in names if name in _VALUE_OPTIONS), None)
    if wrapper is None:
        return
    index = _skip_options(argv, 1, _VALUE_OPTIONS[wrapper])
    if wrapper == "env":
        while index < len(argv) and "=" in argv[index] and not argv[index].startswith("="):
            index += 1
    elif wrapper == "timeout":
        index += 1  # the duration
    yield from commands_in(argv[index:], depth + 1)


@dataclass(frozen=True, slots=True)
class _Normalised:
    programs: frozenset[str]
    options: frozenset[str]
    positionals: tuple[str, ...]


def _normalise(argv: Sequence[str], programs: frozenset[str] | None = None) -> _Normalised:
    names = programs if programs is not None else _program_names(argv[0])
    rest = list(argv[1:])
    if "git" in names:
        index = 0
        while index < len(rest) and rest[index].startswith("-"):
            index += 2 if rest[index] in _GIT_GLOBAL_VALUE else 1
        rest = rest[index:]
    aliases: dict[str, str] = {}
    for name in names:
        aliases.update(_LONG_TO_SHORT.get(name, {}))
    options: set[str] = set()
    positionals: list[str] = []
    for position, token in enumerate(rest):
        if token == "--":
            positionals.extend(rest[position + 1 :])
            break
        if token.startswith("--") and len(token) > 2:
            long = token[2:].split("=", 1)[0]
            options.add(aliases.get(long, f"-{long}"))
        elif token.startswith("-") and len(token) > 1:
            options.update(aliases.get(letter, letter) for letter in token[1:])
        else:
            positionals.append(token)
    return _Normalised(names, frozenset(options), tuple(positionals))


def _prefix_matches(prefix: Sequence[str], command: _Normalised) -> bool:
    wanted = _normalise(prefix, frozenset({prefix[0]}))
    if prefix[0] not in command.programs or not wanted.options <= command.options:
        return False
    return command.positionals[: len(wanted.positionals)] == wanted.positionals


def _glob_lines(argv: Sequence[str], command: Sequence[str]) -> Iterator[str]:
    yield shlex.join(argv)
    yield shlex.join(command)
    for name in _program_names(command[0]):
        yield shlex.join([name, *command[1:]])
        if name == "git":
            git = _normalise(command, frozenset({"git"}))
            yield shlex.join(["git", *sorted(git.options), *git.positionals])
            index = 1
            while index < len(command) and command[index].startswith("-"):
                index += 2 if command[index] in _GIT_GLOBAL_VALUE else 1
            yield shlex.join(["git", *command[index:]])


def policy_digest(data: bytes) -> str:
    """The digest that pins a run's policy file (`raw/policy.json`) at run start."""
    import hashlib

    return "sha256:" + hashlib.sha256(data).hexdigest()


def matching_rule(
    rules: Sequence[DenyRuleLike], argv: Sequence[str]
) -> tuple[int, DenyRuleLike] | None:
    """The first deny rule (index, rule) that refuses `argv` or a command it wraps, or None."""
    commands = list(commands_in(argv))
    normalised = [_normalise(command) for command in commands]
    for index, rule in enumerate(rules):
        prefix = rule.argv_prefix
        if prefix is not None and any(_prefix_matches(prefix, n) for n in normalised):
            return index, rule
        glob = rule.glob
        if glob is not None and any(
            fnmatch.fnmatchcase(line, glob)
            for command in commands
            for line in _glob_lines(argv, command)
        ):
            return index, rule
    return None
