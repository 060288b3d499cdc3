"""The tokens file, read again when it changes: a token is added, rotated or revoked on a
running cluster by editing the file (or updating the Kubernetes Secret it is mounted from),
without a restart.

Every `interval_s` a thread compares the file's (inode, size, mtime) with what it last read;
a Secret volume swaps a symlink, which changes the inode, so a stat is enough. A file that
no longer parses is refused whole (TokensFileError names the field, logged at ERROR and
counted as `failed`): the tokens in use stay as they were, since half a tokens file would
lock callers out or let them in by accident. A file that parses replaces every token at
once, and `on_change` runs (the admin endpoint ends every console session, so a revoked
token's browser sessions end with it).

Lookups are a read of one attribute holding an immutable TokenSet: the hot path takes no lock.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from dispatcher.auth.tokens import Token, TokenSet, TokensFileError, load_tokens
from dispatcher.base.file_stamp import file_stamp
from dispatcher.base.periodic_thread import PeriodicThread

log = logging.getLogger(__name__)


_stamp = file_stamp


class ReloadingTokens:
    """A TokenSet (find, tokens, len) that follows its file."""

    def __init__(self, path: str, *, interval_s: float = 5.0,
                 on_reload: Callable[[str], None] = lambda result: None,
                 on_change: Callable[[], None] = lambda: None):
        """Reads the file now: a node must not start on a tokens file it cannot use
        (TokensFileError). on_reload gets "loaded" or "failed" after each read past the first."""
        self._path = path
        self._interval_s = interval_s
        self._on_reload = on_reload
        self._on_change = on_change
        self._stamp = _stamp(path)
        self._current: TokenSet = load_tokens(path)
        self._follower = PeriodicThread("taskring-tokens-reload", interval_s, self.check)

    # ---- a TokenSet ----

    @property
    def tokens(self) -> Sequence[Token]:
        return self._current.tokens

    def __len__(self) -> int:
        return len(self._current)

    def find(self, secret: str) -> Token | None:
        return self._current.find(secret)

    # ---- following the file ----

    def start(self) -> None:
        self._follower.start()

    def stop(self) -> None:
        self._follower.stop()

    def check(self) -> bool:
        """Read the file again if it changed since the last read; True when new tokens are in use."""
        stamp = _stamp(self._path)
        if stamp == self._stamp:
            return False
        self._stamp = stamp   # a bad file is reported once, not every interval
        try:
            tokens = load_tokens(self._path)
        except TokensFileError as exc:
            log.error("tokens file changed but cannot be used, keeping the %d tokens in use: %s",
                      len(self._current), exc)
            self._on_reload("failed")
            return False
        self._current = tokens
        log.info("tokens file %s read again: %d tokens", self._path, len(tokens))
        self._on_reload("loaded")
        try:
            self._on_change()
        except Exception:
            log.exception("after the tokens changed, on_change failed")
        return True
