import shutil
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, settings

from premath.cli._root import AppContext
from premath.clock import FrozenClock
from tests.support.cli import Outcome, invoke

# too_slow times data generation on the wall clock, which a loaded machine stretches (issue 35).
settings.register_profile(
    "ci", deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci")

T0 = datetime(2026, 3, 1, 10, 0, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(T0)


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """Run the test inside an empty folder: our default paths are relative, like the reference's."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def cli_run(workdir, clock):
    """`cli_run("harness-session", "read", "--json")` in the test's folder with a frozen clock."""

    def run(*args: str, stdin: str | None = None) -> Outcome:
        return invoke(*args, app=AppContext(clock=clock, lock_timeout_s=2.0), stdin=stdin)

    return run


@pytest.fixture
def browser():
    """A started headless Chromium (tests/support/browser.py), or a skip saying what is missing."""
    from tests.support.browser import chromium, require_browser

    binary = require_browser()
    with chromium(binary) as running:
        yield running


@pytest.fixture(scope="session", autouse=True)
def session_witness_keys(tmp_path_factory):
    """The key file of the whole session, set before any module-scoped fixture signs a witness
    (never the user's own config folder)."""
    path = tmp_path_factory.mktemp("session-witness-keys") / "witness.keys"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PREMATH_WITNESS_KEY_FILE", str(path))
        yield path


@pytest.fixture(autouse=True)
def witness_key_file(session_witness_keys, tmp_path_factory, monkeypatch):
    """Every test signs and verifies instruction witnesses with a key file of its own, outside
    the user's config folder (premath.store.witness_mac, D22-3): a copy of the session's keys,
    so witnesses a module-scoped fixture signed still verify, and a test may break its copy."""
    path = tmp_path_factory.mktemp("witness-keys") / "witness.keys"
    if session_witness_keys.exists():
        shutil.copy2(session_witness_keys, path)
    monkeypatch.setenv("PREMATH_WITNESS_KEY_FILE", str(path))
    return path
