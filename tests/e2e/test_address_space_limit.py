"""Under a 1 GiB address-space limit (`ulimit -v 1048576`, as a container or CI sandbox may
impose) every hot command works on an ordinary store: no read reserves its size cap up front
(D26-5). The caps still refuse what is too big, and devices stay refused."""

import os
import shlex
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.support.observation import write_witnesses
from tests.support.stores import write_open_store

LIMIT_KIB = 1048576


def _limited(command: list[str], cwd: Path, env: dict[str, str] | None = None):
    script = f"ulimit -v {LIMIT_KIB}; exec {shlex.join(command)}"
    return subprocess.run(
        ["sh", "-c", script],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        timeout=120,
        check=False,
    )


def _premath(*args: str) -> list[str]:
    return [sys.executable, "-m", "premath", *args]


@pytest.fixture
def project(tmp_path):
    write_open_store(tmp_path, 1000)
    (tmp_path / "turn.json").write_bytes(b'{"evidence": {}}')
    write_witnesses(tmp_path)  # what observe-build reads
    return tmp_path


COMMANDS = [
    ("issue", "ready", "--json"),
    ("issue", "list", "--json"),
    ("issue", "show", "bd-7", "--json"),
    ("issue", "claim-next", "--assignee", "w1", "--json"),
    ("issue", "update", "bd-9", "--notes", "limited", "--json"),
    ("dep", "diagnostics", "--json"),
    ("harness-session", "write", "--state", "active", "--json"),
    ("harness-session", "read", "--json"),
    ("harness-session", "bootstrap", "--json"),
    (
        "harness-trajectory",
        "append",
        "--step-id",
        "s1",
        "--action",
        "a",
        "--result-class",
        "completed",
        "--json",
    ),
    ("harness-trajectory", "query", "--json"),
    ("observe-build", "--json"),
    ("observe", "--mode", "needs_attention", "--json"),
]


def test_every_hot_command_works_under_a_1_gib_address_space_limit(project):
    for args in COMMANDS:
        done = _limited(_premath(*args), project)
        assert (done.returncode, done.stderr) == (0, b""), args
        orjson.loads(done.stdout)


def test_the_store_cap_still_refuses_a_store_over_it(project):
    done = _limited(
        _premath("issue", "ready", "--json"), project, {"PREMATH_MAX_STORE_BYTES": "1000"}
    )
    assert done.returncode == 1
    message = orjson.loads(done.stdout)["error"]["message"]
    assert message.endswith(
        "is larger than 1000 bytes; raise PREMATH_MAX_STORE_BYTES if it is meant to be"
    )


def test_an_endless_file_is_still_refused(project):
    done = _limited(_premath("issue", "ready", "--issues", "/dev/zero", "--json"), project)
    assert done.returncode == 1
    assert b"is not a regular file (a device)" in done.stdout


def test_a_file_whose_size_understates_is_read_on_to_its_cap():
    """A size `fstat` understates (a /proc file says 0) is read on by bounded steps."""
    from premath.errors import InputInvalid
    from premath.store.files import ReadCap, read_bounded

    proc_file = Path("/proc/self/status")
    data = read_bounded(proc_file, ReadCap("PREMATH_TEST_CAP", 1 << 20))
    assert data.startswith(b"Name:")
    assert data.endswith(b"\n")
    with pytest.raises(InputInvalid, match="larger than 10 bytes"):
        read_bounded(proc_file, ReadCap("PREMATH_TEST_CAP", 10))
