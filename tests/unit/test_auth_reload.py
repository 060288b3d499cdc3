"""The tokens file followed while a node runs (dispatcher/auth/reload.py): a change is read
again, a file that does not parse is refused whole and the tokens in use are kept, and the
admin endpoint's check sees the new tokens at once."""
from __future__ import annotations

import json
import os

import pytest

from dispatcher.admin.auth import admin_authenticator
from dispatcher.auth.reload import ReloadingTokens
from dispatcher.auth.tokens import TokensFileError, new_token


def name_found(tokens: ReloadingTokens, secret: str) -> str | None:
    token = tokens.find(secret)
    return None if token is None else token.name


def write(path, *entries: dict, bump: int = 0) -> None:
    path.write_text(json.dumps({"tokens": list(entries)}))
    # A rewrite within one mtime tick must still read as a change: the size or inode say so
    # most of the time; a test cannot rely on that, so it moves the mtime on.
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + bump * 1_000_000_000))


def test_a_changed_file_is_read_again_and_a_bad_one_keeps_the_tokens_in_use(tmp_path):
    path = tmp_path / "tokens.json"
    old_secret, old = new_token("old", ["billing"], ["read"])
    new_secret, new = new_token("new", "*", "*", admin_role="viewer")
    write(path, old)
    results: list[str] = []
    changes: list[int] = []
    tokens = ReloadingTokens(str(path), on_reload=results.append, on_change=lambda: changes.append(1))
    authenticate = admin_authenticator(tokens, None)
    assert name_found(tokens, old_secret) == "old" and tokens.find(new_secret) is None
    assert tokens.check() is False and results == []   # nothing changed: nothing read

    write(path, new, bump=1)   # rotation: "old" revoked, "new" added
    assert tokens.check() is True and results == ["loaded"] and changes == [1]
    assert tokens.find(old_secret) is None and name_found(tokens, new_secret) == "new"
    headers: dict = {"Authorization": f"Bearer {new_secret}"}
    identity = authenticate(headers, {})
    assert identity is not None and identity.name == "new"

    path.write_text('{"tokens": [{"name": "x"}]}')   # half a file
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
    assert tokens.check() is False and results == ["loaded", "failed"] and changes == [1]
    assert name_found(tokens, new_secret) == "new"       # kept, whole
    assert tokens.check() is False and results == ["loaded", "failed"]   # reported once

    path.unlink()
    assert tokens.check() is False and results[-1] == "failed" and tokens.find(new_secret) is not None


def test_the_first_read_must_succeed(tmp_path):
    path = tmp_path / "tokens.json"
    path.write_text("not json")
    with pytest.raises(TokensFileError, match="file: is not JSON"):
        ReloadingTokens(str(path))


def test_the_thread_follows_the_file_and_stops(tmp_path):
    from harness.wait import wait_until

    path = tmp_path / "tokens.json"
    secret, entry = new_token("a", "*", ["read"])
    write(path, new_token("b", "*", ["read"])[1])
    tokens = ReloadingTokens(str(path), interval_s=0.01)
    tokens.start()
    try:
        write(path, entry, bump=1)
        wait_until(lambda: tokens.find(secret) is not None, 5, "the new token in use")
    finally:
        tokens.stop()
    import threading
    assert not any(t.name == "taskring-tokens-reload" for t in threading.enumerate())
