"""WarmStores: a long-running reader never serves a stale store, whoever wrote the file."""

import orjson

from premath.clock import SystemClock
from premath.store.issues_file import WarmStores, mutate_store
from tests.cli.test_issue import row, seed

NOW = SystemClock().now()


def test_reads_follow_every_kind_of_write(tmp_path):
    path = str(tmp_path / "issues.jsonl")
    seed(tmp_path, row("bd-1"), row("bd-2"), path="issues.jsonl")
    warm = WarmStores()
    first = warm.read(path, NOW)
    assert warm.read(path, NOW) is first  # unchanged file: the same store, no parse

    def retitle(issues):
        issues["bd-2"]["title"] = "changed"
        return None, ("bd-2",)

    mutate_store(path, retitle, now=NOW, timeout_s=5)  # another writer, one row in place
    refreshed = warm.read(path, NOW)
    assert refreshed["bd-2"]["title"] == "changed"
    assert refreshed["bd-1"] is first["bd-1"]  # unchanged rows are kept
    seed(tmp_path, row("bd-1"), row("bd-2"), row("bd-3"), path="issues.jsonl")  # rows added
    assert sorted(warm.read(path, NOW)) == ["bd-1", "bd-2", "bd-3"]
    (tmp_path / "issues.jsonl").write_bytes(orjson.dumps(row("bd-9")) + b"\n")  # same size class
    assert list(warm.read(path, NOW)) == ["bd-9"]


def test_a_mutation_through_the_warm_store_keeps_the_file_canonical(tmp_path):
    path = str(tmp_path / "issues.jsonl")
    seed(tmp_path, row("bd-2"), row("bd-10"), path="issues.jsonl")  # not in byte order
    warm = WarmStores()

    def add(issues):
        issues["bd-1"] = row("bd-1")
        return None, True

    mutate_store(path, add, now=NOW, timeout_s=5, warm=warm)

    def retitle(issues):
        issues["bd-2"]["title"] = "x"
        return None, ("bd-2",)

    mutate_store(path, retitle, now=NOW, timeout_s=5, warm=warm)
    ids = [
        orjson.loads(line)["id"] for line in (tmp_path / "issues.jsonl").read_bytes().splitlines()
    ]
    assert ids == ["bd-1", "bd-10", "bd-2"]
    assert warm.read(path, NOW)["bd-2"]["title"] == "x"
