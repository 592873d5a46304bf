"""Browser sessions (premath/web/sessions.py): one-time codes, session lifetimes and caps, on an
injected monotonic clock. The real-process paths are in tests/web/test_one_process.py."""

import anyio

from premath.web.sessions import CODE_TTL_S, MAX_CODES, MAX_SESSIONS, SESSION_TTL_S, BrowserSessions


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_code_opens_once_within_its_lifetime():
    clock = Clock()
    sessions = BrowserSessions(clock)
    code = sessions.mint_code("w1")
    assert sessions.redeem(code) == "w1"
    assert sessions.redeem(code) is None
    late = sessions.mint_code("w1")
    clock.now += CODE_TTL_S
    assert sessions.redeem(late) is None
    assert sessions.redeem("never-minted") is None


def test_only_a_callers_newest_codes_are_kept_and_never_at_anothers_expense():
    sessions = BrowserSessions(Clock())
    others = sessions.mint_code("w2")
    codes = [sessions.mint_code("w1") for _ in range(MAX_CODES + 1)]
    assert sessions.redeem(codes[0]) is None
    assert sessions.redeem(codes[1]) == "w1"
    assert sessions.redeem(codes[-1]) == "w1"
    assert sessions.redeem(others) == "w2"


def test_a_session_lasts_its_lifetime_or_until_closed():
    async def scenario() -> None:
        clock = Clock()
        sessions = BrowserSessions(clock)
        first, second = sessions.open("w1"), sessions.open("w2")
        found = sessions.find(first)
        assert found is not None
        assert (found.caller, sessions.remaining_s(found)) == ("w1", SESSION_TTL_S)
        sessions.close(first)
        assert found.ended.is_set()
        assert sessions.find(first) is None
        clock.now += SESSION_TTL_S - 1
        assert sessions.find(second) is not None
        clock.now += 1
        assert sessions.find(second) is None
        assert sessions.find("forged") is None

    anyio.run(scenario)


def test_a_callers_oldest_session_goes_first_past_its_cap_and_no_one_elses():
    async def scenario() -> None:
        sessions = BrowserSessions(Clock())
        others = sessions.open("w2")
        ids = [sessions.open("w1") for _ in range(MAX_SESSIONS + 1)]
        first = sessions.find(ids[0])
        assert first is None
        assert sessions.find(ids[1]) is not None
        assert sessions.find(ids[-1]) is not None
        kept = sessions.find(others)
        assert kept is not None
        assert not kept.ended.is_set()

    anyio.run(scenario)
