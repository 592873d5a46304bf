"""A remote worker's outbox (premath/harness/outbox.py) against a stand-in authority: entries go
in order, each once; one the authority cannot take now stops delivery and waits; one it refuses
for good is set aside with its reason and delivery goes on; a torn last entry (a crash mid-write)
is not one; a new run continues the worker's step indexes; each record is the step folder's
files within the per-step cap."""

from dataclasses import dataclass, field
from typing import Any

from premath.errors import AuthorityRefused
from premath.harness.fleet_record import STEP_RECORD_CAP
from premath.harness.outbox import TAIL_BYTES, Outbox, ShipPostponed, ShipRefused


@dataclass
class Authority:
    """Takes rows into `rows`; answers as `plan` says for given step ids."""

    plan: dict[str, Exception] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)
    records: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def location(self) -> str:
        return "http://authority/mcp"

    def ship_step(self, worker_id, lease_id, row, files, *, patience_s):
        failure = self.plan.get(row["stepId"])
        if failure is not None:
            raise failure
        if row in self.rows:
            return False
        self.rows.append(row)
        self.records[row["stepId"]] = files
        return True


def row(step_id: str) -> dict[str, Any]:
    return {"stepId": step_id, "action": "worker.loop", "resultClass": "completed"}


def outbox(tmp_path) -> Outbox:
    return Outbox(str(tmp_path / ".premath" / "harness_outbox.w1.jsonl"), str(tmp_path))


def test_entries_go_in_order_once_and_wait_while_the_authority_is_away(tmp_path):
    box, lines = outbox(tmp_path), []
    for n in (1, 2, 3):
        box.add("w1", f"L{n}", row(f"w1.bd-{n}.{n}"), None)
    away = Authority(plan={"w1.bd-2.2": ShipPostponed("down")})
    assert box.deliver(away, patience_s=1.0, report=lines.append) == 2
    assert [r["stepId"] for r in away.rows] == ["w1.bd-1.1"]  # the third waits behind the second
    back = Authority(rows=list(away.rows))
    assert box.deliver(back, patience_s=None, report=lines.append) == 0
    assert [r["stepId"] for r in back.rows] == ["w1.bd-1.1", "w1.bd-2.2", "w1.bd-3.3"]
    assert box.deliver(back, patience_s=None, report=lines.append) == 0
    assert len(back.rows) == 3
    assert (tmp_path / ".premath" / "harness_outbox.w1.jsonl.delivered").read_text() == "3\n"
    assert lines == []


def test_a_row_refused_for_good_is_set_aside_and_a_gate_refusal_keeps_everything(tmp_path):
    box, lines = outbox(tmp_path), []
    for n in (1, 2):
        box.add("w1", None, row(f"w1.x.{n}"), None)
    gate = Authority(plan={"w1.x.1": AuthorityRefused("instruction witness lacks the claim")})
    assert box.deliver(gate, patience_s=None, report=lines.append) == 2
    conflict = "[failureClass=trajectory.step_conflict] step w1.x.1 is already there"
    refusing = Authority(plan={"w1.x.1": ShipRefused(conflict)})
    assert box.deliver(refusing, patience_s=None, report=lines.append) == 0
    assert [r["stepId"] for r in refusing.rows] == ["w1.x.2"]
    refused = (tmp_path / ".premath" / "harness_outbox.w1.jsonl.refused").read_text()
    assert conflict in refused
    assert lines == [
        f"[outbox] the authority refused step w1.x.1: {conflict} (kept in {box.refused_path})"
    ]


def test_a_torn_last_entry_is_no_entry_and_a_new_run_continues_the_step_indexes(tmp_path):
    box = outbox(tmp_path)
    box.add("w1", None, row("w1.bd-7.4"), None)
    box.add("w1", None, row("w1.runtime.9"), None)
    with open(box.path, "ab") as handle:
        handle.write(b'{"workerId": "w1", "row": {"stepId": "w1.bd-8.')
    assert [entry["row"]["stepId"] for entry in box.pending()] == ["w1.bd-7.4", "w1.runtime.9"]
    assert box.next_step_index("w1") == 10
    assert outbox(tmp_path / "empty").next_step_index("w1") == 1


def test_a_record_is_the_step_folders_files_whole_or_their_tails(tmp_path):
    folder = tmp_path / ".premath" / "harness_steps" / "w1.bd-1.1"
    (folder / "attempt-1").mkdir(parents=True)
    (folder / "step.json").write_text('{"schema": 1}\n')
    (folder / "attempt-1" / "verify.stdout").write_bytes(b"a" * TAIL_BYTES + b"END\n")
    (folder / "attempt-1" / "verify.group").write_text("")
    box = outbox(tmp_path)
    box.add("w1", "L1", row("w1.bd-1.1"), ".premath/harness_steps/w1.bd-1.1")
    authority = Authority()
    box.deliver(authority, patience_s=None, report=lambda _line: None)
    files = dict(authority.records["w1.bd-1.1"])
    assert sorted(files) == ["attempt-1/verify.stdout", "step.json"]
    assert files["step.json"] == '{"schema": 1}\n'
    tail = files["attempt-1/verify.stdout"]
    assert tail.startswith("...[first 4 bytes not shipped]\n")
    assert tail.endswith("aEND\n")
    assert sum(len(text.encode()) for text in files.values()) < STEP_RECORD_CAP
