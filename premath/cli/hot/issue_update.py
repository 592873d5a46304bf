"""`issue update`: its declaration is the operation catalogue's (premath/ops/issue_writes.py);
here are the command line's body and text.

A module of its own: loading the catalogue's data is for this command alone, so `issue ready`
and the other hot issue commands do not pay for it (`LazyGroup.declarations`)."""

from __future__ import annotations

import io
import os
import sys

from premath.cli._operations import operation_command
from premath.cli._reply import AppContext, Reply, usage_error
from premath.cli._text import lines_text
from premath.errors import IoFailure
from premath.ops.issue_writes import ISSUE_UPDATE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def updated_text(document: dict[str, Any]) -> str:
    issue = document["issue"]
    return lines_text(
        "premath issue update",
        [("Updated", f"{issue['id']} [{issue['status']}]"), ("Path", document["issuesPath"])],
    )


def read_notes_file(source: str) -> str:
    """`--notes-file`: `-` reads stdin, anything else a UTF-8 file (line ends read as `\n`)."""
    try:
        if source == "-":
            stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8")
            try:
                return stdin.read()
            finally:
                stdin.detach()
        from premath.store.files import read_bounded_text

        return read_bounded_text(source)
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "stream did not contain valid UTF-8"
        raise IoFailure(f"failed to read notes file `{source}`: {reason or exc}") from None


# `issue update`'s declaration and help are the operation's; its body is the command line's
# part: `--notes-file`, the input warnings, the holder's warning to the loop's worker. The
# fields go to the store as given (a blank status is stored, as the reference's CLI does).
@operation_command(ISSUE_UPDATE)
def issue_update(app: AppContext, /, notes_file: str | None, issues: str, **fields: Any) -> Reply:
    from premath.issues.documents import issue_document
    from premath.issues.memory import update_issue

    issue_id = fields.pop("id")
    if fields["notes"] is not None and notes_file is not None:
        usage_error("the argument '--notes' cannot be used with '--notes-file'")
    if notes_file is not None:
        fields["notes"] = read_notes_file(notes_file)
    from premath.issues.leases import holder_warning
    from premath.issues.lifecycle import input_warnings
    from premath.timefmt import epoch_nanos

    now = app.clock.now()
    held: list[str] = []

    def before(row: Any) -> None:
        # the caller is the loop's worker id when it runs us, else nobody in particular
        caller = os.environ.get("PREMATH_WORKER_ID")
        said = holder_warning(issue_id, row.get("lease"), caller, epoch_nanos(now))
        held.extend([said] if said else [])

    row = update_issue(
        issues, issue_id, now=now, timeout_s=app.lock_timeout(), before=before, **fields
    )
    warnings = [*input_warnings(title=fields["title"], status=fields["status"]), *held]
    return Reply(issue_document("issue.update", issues, row), text=updated_text, warnings=warnings)
