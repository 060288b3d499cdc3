"""taskring.idempotency without a database: bad arguments are refused before any SQL is sent,
and its errors tell an executor what to do. (The guarantees are tested on MariaDB in
tests/integration/test_idempotency.py.)"""
from __future__ import annotations

import datetime as dt

import pytest

from taskring import NonRetryableError, RetryableError, TaskringError
from taskring.idempotency import (
    IdempotencyError,
    IdempotencyInProgress,
    IdempotencyUnknownOutcome,
    forget,
    once,
    once_external,
    purge_expired,
    resolve,
    table_ddl,
)


class NoDatabase:
    """A connection that fails the test if anything reaches it."""

    def cursor(self):
        raise AssertionError("SQL was sent for arguments that should have been refused")

    def commit(self):
        raise AssertionError("commit")

    def rollback(self):
        raise AssertionError("rollback")

    def close(self):
        pass


BAD_CALLS = [
    ("empty key", lambda c: once(c, "", lambda cur: 1), "key"),
    ("key too long", lambda c: once(c, "k" * 256, lambda cur: 1), "key"),
    ("key not a string", lambda c: once(c, 42, lambda cur: 1), "key"),  # type: ignore[arg-type]
    ("table with SQL in it", lambda c: once(c, "k", lambda cur: 1, table="t; DROP TABLE x"), "table"),
    ("table quoted", lambda c: forget(c, "k", table="`t`"), "table"),
    ("zero ttl", lambda c: once(c, "k", lambda cur: 1, ttl=0), "ttl"),
    ("negative ttl", lambda c: once_external(c, "k", lambda: 1, ttl=dt.timedelta(seconds=-1)), "ttl"),
    ("unknown on_unknown", lambda c: once_external(c, "k", lambda: 1, on_unknown="ignore"), "on_unknown"),  # type: ignore[arg-type]
    ("negative lock timeout", lambda c: once_external(c, "k", lambda: 1, lock_timeout_s=-1), "lock_timeout_s"),
    ("result not JSON", lambda c: resolve(c, "k", object()), "JSON-serializable"),
    ("empty purge batches", lambda c: purge_expired(c, batch_size=0), "batch_size"),
]


@pytest.mark.parametrize("case,call,field", BAD_CALLS, ids=[c[0] for c in BAD_CALLS])
def test_bad_arguments_are_refused_before_any_sql(case, call, field):
    with pytest.raises((ValueError, TypeError), match=field):
        call(NoDatabase())


def test_the_ddl_names_the_table_quoted_and_keys_it_by_the_key():
    ddl = table_ddl("svc_idem")
    assert ddl.startswith("CREATE TABLE IF NOT EXISTS `svc_idem` (")
    assert "PRIMARY KEY (idem_key)" in ddl and "result      JSON" in ddl


def test_an_unknown_outcome_dead_letters_and_says_what_to_do():
    err = IdempotencyUnknownOutcome("order-cancel:1", dt.datetime(2030, 1, 1, 12, 0), 2)
    assert isinstance(err, NonRetryableError) and isinstance(err, IdempotencyError)
    assert isinstance(err, TaskringError)
    assert (err.key, err.attempts) == ("order-cancel:1", 2)
    text = str(err)
    assert "'order-cancel:1'" in text and "unknown" in text and "forget()" in text and "resolve()" in text


def test_a_key_in_progress_is_retried():
    err = IdempotencyInProgress("k", "10 s")
    assert isinstance(err, RetryableError) and isinstance(err, IdempotencyError)
    assert not isinstance(err, NonRetryableError)
    assert "'k'" in str(err) and "10 s" in str(err)
