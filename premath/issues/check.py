"""`issue check`: the issue graph contract (premath.issue_graph.check.v1; specs/issue-memory.md)."""

from __future__ import annotations

from premath.lean import NamedTuple
from premath.models.vocabulary import KNOWN_STATUSES
from premath.store.issues_file import IssueMap
from premath.text import rust_trim
from premath.timefmt import compiled

CHECK_KIND = "premath.issue_graph.check.v1"
DEFAULT_NOTE_WARN_THRESHOLD = 2000

EPIC_MISMATCH = "issue_graph.issue_type.epic_mismatch"
ACCEPTANCE_MISSING = "issue_graph.acceptance.missing"
VERIFICATION_MISSING = "issue_graph.verification_command.missing"
NOTES_LARGE = "issue_graph.notes.large"
STATUS_UNKNOWN = "issue_graph.status.unknown"
TITLE_BLANK = "issue_graph.title.blank"

COMMAND_WORDS = (
    "mise run",
    "python3",
    "cargo",
    "premath",
    "sh",
    "nix develop -c",
    "uv run",
    "pytest",
)
"""The words a verification command must start with (the reference's rule, which `issue check`
keeps: its verdict is wire output); anything else is wrapped in `sh -c '...'`."""

# The reference's own patterns (crates/premath-bd/src/issue_graph.rs), case-insensitive;
# compiled on first use (`timefmt.compiled`): the hot reads that import this module never match.
# Its `cargo(?: run)?` matches what `cargo` alone does: the rest of the line is free text.
_ACCEPTANCE = r"(?im)^\s*acceptance(?:\s+criteria)?\s*:"
_COMMAND = "(?:" + "|".join(COMMAND_WORDS) + r")\b"
_COMMAND_LINE = rf"(?im)^\s*(?:[-*]\s*)?(?:`)?{_COMMAND}[^`\n]*(?:`)?\s*$"
_COMMAND_SPAN = rf"(?i)`{_COMMAND}[^`]*`"


def has_acceptance(description: str) -> bool:
    """A description line starting, in any case, with `Acceptance:` or `Acceptance criteria:`."""
    return compiled(_ACCEPTANCE).search(description) is not None


def has_verification_command(text: str) -> bool:
    """A command line (optional bullet and backticks) or an inline backticked command."""
    return (
        compiled(_COMMAND_LINE).search(text) is not None
        or compiled(_COMMAND_SPAN).search(text) is not None
    )


_VERIFICATION_HEADING = r"(?im)^\s*verification(?:\s+commands?)?\s*:(.*)$"
_SECTION_END = r"^\s*$|^\s*[A-Z][A-Za-z ]*:\s*$|^\s*[A-Z][A-Za-z ]*:\s"


def _verification_lines(description: str) -> list[str]:
    """The lines of the description's `Verification:` sections: each heading line's rest plus
    the lines below it up to a blank line or the next `Heading:`."""
    lines: list[str] = []
    for heading in compiled(_VERIFICATION_HEADING).finditer(description):
        lines.append(heading.group(1))
        for line in description[heading.end() :].splitlines()[1:]:
            if compiled(_SECTION_END).match(line):
                break
            lines.append(line)
    return lines


def _bare(line: str) -> str:
    return line.strip().lstrip("-*").strip().strip("`").strip()


def verification_commands(description: str) -> list[str]:
    """The commands of the description's `Verification:` section, as `issue check` finds them:
    a backticked span or a whole line (bullet and backticks dropped) that starts with one of
    the command words `issue check` knows."""
    commands: list[str] = []
    for line in _verification_lines(description):
        commands.extend(_line_commands(line))
    return list(dict.fromkeys(commands))


def _line_commands(line: str) -> list[str]:
    spans = [span.strip("`") for span in compiled(_COMMAND_SPAN).findall(line)]
    if not spans and compiled(_COMMAND_LINE).fullmatch(line):
        spans = [_bare(line)]
    return [span.strip() for span in spans if span.strip()]


def unrecognised_verification_lines(description: str) -> list[str]:
    """Lines under a `Verification:` heading that name no command `issue check` recognises
    (`kill -0 $PPID`): what the user meant to run, which the loop will not (issue 35)."""
    unrecognised = []
    for line in _verification_lines(description):
        if _bare(line) and not _line_commands(line):
            unrecognised.append(_bare(line))
    return list(dict.fromkeys(unrecognised))


def unrecognised_advice(line: str) -> str:
    """What to do about a verification line the loop does not recognise."""
    from shlex import quote  # lazy: the hot reads import this module

    return (
        f"`{line}` under Verification: does not start with a command word premath recognises "
        f"({', '.join(COMMAND_WORDS)}); wrap it: Verification: `sh -c {quote(line)}`"
    )


class Finding(NamedTuple):
    issue_id: str
    finding_class: str
    message: str


class CheckReport(NamedTuple):
    """Errors and warnings per issue in id order; any error rejects the graph."""

    errors: list[Finding]
    warnings: list[Finding]
    issue_count: int
    note_warn_threshold: int

    @property
    def accepted(self) -> bool:
        return not self.errors


def check_issues(issues: IssueMap, note_warn_threshold: int) -> CheckReport:
    """The issue graph contract over every issue."""
    errors: list[Finding] = []
    warnings: list[Finding] = []
    for issue_id in sorted(issues):
        row = issues[issue_id]
        if row["title"].startswith("[EPIC]") and row["issue_type"] != "epic":
            errors.append(
                Finding(
                    issue_id,
                    EPIC_MISMATCH,
                    f"title starts with [EPIC] but issue_type={row['issue_type']}",
                )
            )
        active = rust_trim(row["status"]).lower() in ("open", "in_progress")
        if active and not row["ephemeral"]:
            description = rust_trim(row.get("description", ""))
            notes = rust_trim(row.get("notes", ""))
            combined = f"{description}\n{notes}" if description and notes else description + notes
            if not has_acceptance(description):
                errors.append(
                    Finding(
                        issue_id,
                        ACCEPTANCE_MISSING,
                        "active issue must include an Acceptance section",
                    )
                )
            if not has_verification_command(combined):
                errors.append(
                    Finding(
                        issue_id,
                        VERIFICATION_MISSING,
                        "active issue must include at least one verification command",
                    )
                )
        # Ours (divergence D16-2): stored as given, as the reference does, but worth a look.
        if row["status"] not in KNOWN_STATUSES:
            warnings.append(
                Finding(
                    issue_id,
                    STATUS_UNKNOWN,
                    f"status {row['status']!r} is not one of {', '.join(KNOWN_STATUSES)}; "
                    "the issue is neither ready nor closed",
                )
            )
        if not row["title"].strip():
            warnings.append(Finding(issue_id, TITLE_BLANK, "the title is blank"))
        notes_length = len(row.get("notes", ""))
        if notes_length > note_warn_threshold:
            warnings.append(
                Finding(
                    issue_id,
                    NOTES_LARGE,
                    f"notes payload exceeds warning threshold (len={notes_length}, "
                    f"threshold={note_warn_threshold})",
                )
            )
    return CheckReport(errors, warnings, len(issues), note_warn_threshold)


def new_issue_warnings(description: str, status: str) -> list[str]:
    """What `issue check` will reject in an issue about to be added, said at `issue add` and
    `issue discover` (D25-3): the issue is stored as given, with warnings on stderr. An issue
    whose command is not under a `Verification:` heading passes the check, but the loop does
    not find it and falls back to `mise run ci-check`: that is said too."""
    if rust_trim(status).lower() not in ("open", "in_progress"):
        return []
    text = rust_trim(description)
    warnings = []
    if not has_acceptance(text):
        warnings.append(
            f"{ACCEPTANCE_MISSING}: no Acceptance section, so `premath issue check` will reject "
            "this issue; add a line: Acceptance: <what done means>"
        )
    unrecognised = unrecognised_verification_lines(text)
    example = (
        unrecognised_advice(unrecognised[0])
        if unrecognised
        else "add a line: Verification: `<your test command>`"
    )
    if not has_verification_command(text):
        warnings.append(
            f"{VERIFICATION_MISSING}: no verification command, so `premath issue check` will "
            f"reject this issue and the loop would verify it with `mise run ci-check`; {example}"
        )
    elif not (commands := verification_commands(text)):
        warnings.append(
            f"{VERIFICATION_MISSING}: no command under a `Verification:` heading, so the loop "
            f"would verify this issue with `mise run ci-check`; {example}"
        )
    elif unrecognised:
        shown = ", ".join(f"`{command}`" for command in commands)
        warnings.append(f"{VERIFICATION_MISSING}: the loop would run only {shown}; {example}")
    return warnings
