"""The join witness on disk: the reference's witness object, atomically, content-addressed."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from premath.harness.join.check import evaluate_join_check
from premath.harness.join.witness import join_witness_path, write_join_witness
from premath.store.canonical import stdout_bytes
from tests.harness.join_check_inputs import baseline, evidence


def test_witness_is_written_as_the_reference_prints_it(workdir):
    result = evaluate_join_check(baseline())
    path = join_witness_path(result)
    assert path.startswith(".premath/join-witnesses/call-1.")
    assert path.endswith(".json")

    ref = write_join_witness(path, result)

    assert ref == path
    data = Path(path).read_bytes()
    assert data == stdout_bytes(result["witness"])
    assert b'"witnessKind": "premath.harness.join_check.v1"' in data
    assert sorted(os.listdir(".premath/join-witnesses")) == [Path(path).name]


def test_same_evidence_same_path_and_bytes(workdir):
    first = evaluate_join_check(baseline())
    path = write_join_witness(join_witness_path(first), first)
    data = Path(path).read_bytes()
    again = evaluate_join_check(baseline())
    assert write_join_witness(join_witness_path(again), again) == path
    assert Path(path).read_bytes() == data
    assert len(os.listdir(".premath/join-witnesses")) == 1


def test_different_evidence_different_path(workdir):
    document = baseline()
    evidence(document)["toolUse"] = []
    changed = evaluate_join_check(document)
    assert join_witness_path(changed) != join_witness_path(evaluate_join_check(baseline()))
    assert join_witness_path(changed, "w").startswith("w/call-1.")


WRITER = """
import os, sys, time
from premath.harness.join.check import evaluate_join_check
from premath.harness.join.witness import join_witness_path, write_join_witness
from tests.harness.join_check_inputs import baseline
result = evaluate_join_check(baseline())
path = join_witness_path(result)
while not os.path.exists("go"):
    time.sleep(0.005)
for _ in range(int(sys.argv[1])):
    write_join_witness(path, result)
    with open(path, "rb") as handle:
        assert handle.read().endswith(b"}\\n")
"""


@pytest.mark.slow
def test_concurrent_writers_of_one_witness_leave_one_whole_file(workdir):
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, "100"], cwd=workdir, env=env)
        for _ in range(4)
    ]
    Path("go").touch()
    assert [writer.wait(timeout=60) for writer in writers] == [0, 0, 0, 0]
    result = evaluate_join_check(baseline())
    assert Path(join_witness_path(result)).read_bytes() == stdout_bytes(result["witness"])
    assert os.listdir(".premath/join-witnesses") == [Path(join_witness_path(result)).name]
