"""The issue detail's *why* reads step records, which a worker wrote: only the record's own
folder is ever opened, whatever paths the record names (issue 30)."""

from datetime import UTC, datetime

import orjson

from premath.observe.issue_steps import (
    failing_output,
    issue_step_index,
    retry_state,
    step_record_ref,
)

RECORD = ".premath/harness_steps/w1.bd-1.1/step.json"


def _record(root, stderr_path: str) -> None:
    folder = root / ".premath" / "harness_steps" / "w1.bd-1.1"
    (folder / "attempt-1").mkdir(parents=True, exist_ok=True)
    command = {"name": "verify", "status": "exit_nonzero", "exitCode": 1, "stderrPath": stderr_path}
    record = {"attempts": [{"attempt": 1, "commands": [command], "decision": {"maxAttempts": 2}}]}
    (folder / "step.json").write_bytes(orjson.dumps(record))


def test_only_a_step_record_under_the_steps_folder_is_named():
    assert step_record_ref(["failure://x", RECORD]) == RECORD
    for ref in (
        ".premath/harness_steps/../issues.jsonl",
        ".premath/harness_steps/x/../../../etc/step.json",
        ".premath/harness_steps/../step.json",
        "/etc/step.json",
        ".premath/other/x/step.json",
    ):
        assert step_record_ref([ref]) is None, ref


def test_output_named_outside_the_record_folder_is_never_read(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("do not show\n")
    _record(tmp_path, "/node/../secret")
    assert failing_output(str(tmp_path), RECORD) is None
    folder = tmp_path / ".premath" / "harness_steps" / "w1.bd-1.1" / "attempt-1"
    (folder / "verify.stderr").symlink_to(secret)
    _record(tmp_path, "/node/attempt-1/verify.stderr")
    assert failing_output(str(tmp_path), RECORD) is None
    (folder / "verify.stderr").unlink()
    (folder / "verify.stderr").write_text("real failure\n")
    found = failing_output(str(tmp_path), RECORD)
    assert found == {
        "command": "verify",
        "name": "attempt-1/verify.stderr",
        "path": ".premath/harness_steps/w1.bd-1.1/attempt-1/verify.stderr",
        "text": "real failure\n",
    }


def test_a_card_takes_each_issues_latest_step_and_its_retry_state(tmp_path):
    _record(tmp_path, "/n/attempt-1/verify.stderr")
    stamp = datetime(2026, 3, 1, tzinfo=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    rows = [
        {"stepId": "w1.bd-1.2", "issueId": "bd-1", "resultClass": "failed_verification",
         "witnessRefs": [RECORD, "failure://failed_verification"], "finishedAt": stamp},
        {"stepId": "w1.bd-1.1", "issueId": "bd-1", "resultClass": "completed",
         "witnessRefs": [], "finishedAt": stamp},
        {"stepId": "w1.bd-2.1", "issueId": "bd-2", "resultClass": "completed",
         "witnessRefs": ["git://premath/bd-2@abc"], "finishedAt": stamp},
    ]  # fmt: skip
    index = issue_step_index(rows, str(tmp_path))
    assert (index["bd-1"]["attempt"], index["bd-1"]["maxAttempts"]) == (1, 2)
    assert index["bd-1"]["failureClasses"] == ["failed_verification"]
    assert index["bd-2"]["delivered"] == {"branch": "premath/bd-2", "commit": "abc"}
    assert index["bd-2"]["failed"] is False
    assert retry_state({"attempts": "junk"}) == {"attempt": None, "maxAttempts": None}
