"""Console sessions (dispatcher/admin/sessions.py): expiry, eviction of the oldest, sign-out,
the cookie's parsing and attributes."""
from __future__ import annotations

from dispatcher.admin import sessions as ss
from dispatcher.auth.identity import Identity, Role

ALICE = Identity("alice", Role.OPERATOR)
BOB = Identity("bob", Role.VIEWER)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_session_finds_its_identity_until_it_expires_with_no_sliding_renewal():
    clock = Clock()
    sessions = ss.Sessions(ttl_s=60, monotonic=clock)
    sid = sessions.create(ALICE)
    assert sessions.find(sid) == ALICE
    clock.now += 59.9
    assert sessions.find(sid) == ALICE   # being used does not push the expiry
    clock.now += 0.1
    assert sessions.find(sid) is None and len(sessions) == 0
    assert sessions.find("made-up") is None


def test_ids_are_random_kept_only_as_digests_and_the_oldest_goes_first():
    sessions = ss.Sessions(max_sessions=2)
    a, b = sessions.create(ALICE), sessions.create(BOB)
    assert a != b and len(a) >= 40
    assert a not in repr(sessions._by_digest)   # the node's memory holds no usable id
    c = sessions.create(ALICE)
    assert sessions.find(a) is None and sessions.find(b) == BOB and sessions.find(c) == ALICE
    assert sessions.end(b) and not sessions.end(b) and sessions.find(b) is None


def test_the_cookie_is_read_among_others_and_a_bad_header_is_no_session():
    name = ss.cookie_name(8081)
    assert name == "taskring_session_8081"
    assert ss.session_id_from(f"other=1; {name}=abc-DEF_1; taskring_session_8082=zzz", name) == "abc-DEF_1"
    assert ss.session_id_from("taskring_session_8082=zzz", name) is None
    assert ss.session_id_from(None, name) is None and ss.session_id_from(f"{name}=", name) is None
    assert ss.session_id_from('a="unterminated', name) is None


def test_the_set_cookie_lines():
    assert ss.set_cookie("n", "v", max_age_s=60, secure=False) == "n=v; Path=/; Max-Age=60; HttpOnly; SameSite=Strict"
    assert ss.set_cookie("n", "v", max_age_s=60, secure=True).endswith("; Secure")
    assert ss.clear_cookie("n", secure=False) == "n=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict"
