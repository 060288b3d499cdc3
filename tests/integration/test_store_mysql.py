"""The store conformance suite (every area) against the MariaDB stores over one TaskStore on
the real MariaDB, a fresh database per test (migrations applied, dropped afterwards).

KNOWN_DISCREPANCIES lists the cases the real store fails today, as strict
xfails: each is a bug report with its reproduction, and a fix turns it into an
XPASS that fails the run until the entry is removed.
"""
from __future__ import annotations

import uuid

import pymysql
import pytest

from dispatcher.base.config import MySQLConfig
from dispatcher.store.mysql import TaskStore
from harness.world import create_database, drop_database
from tests.conformance import StoreConformance
from tests.conformance.backends import mysql_backend

pytestmark = pytest.mark.integration

# Cases the real store fails today, as strict xfails (test name -> reason); empty now.
KNOWN_DISCREPANCIES: dict[str, str] = {}


class TestMySQLStores(StoreConformance):
    @pytest.fixture
    def backend(self, stack, request):
        reason = KNOWN_DISCREPANCIES.get(request.node.name)
        if reason is not None:
            request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
        database = create_database(stack, f"taskring_conf_{uuid.uuid4().hex[:12]}")
        store = TaskStore(MySQLConfig(host=stack.host, port=stack.mysql_port, user=stack.mysql_user,
                                      password=stack.mysql_password, database=database))
        store.start()

        def query(sql: str) -> list[tuple]:
            conn = stack.mysql_connect(database)
            try:
                with conn.cursor() as cur:
                    cur.execute(sql)
                    return list(cur.fetchall())
            finally:
                conn.close()

        try:
            yield mysql_backend(store, query)
        finally:
            store.stop()
            drop_database(stack, database)


def test_a_holder_frozen_mid_transaction_does_not_keep_the_next_owner_from_claiming(stack):
    # A node frozen (SIGSTOP) inside a fenced write holds a lock on its slot's ownership
    # row; the slot's next owner must still be able to claim it once the holder has
    # been idle past idle_transaction_timeout, well before the lock wait runs out.
    import datetime as dt
    database = create_database(stack, f"taskring_idle_{uuid.uuid4().hex[:12]}")
    config = MySQLConfig(host=stack.host, port=stack.mysql_port, user=stack.mysql_user,
                         password=stack.mysql_password, database=database, idle_transaction_timeout_s=1,
                         lock_wait_timeout_s=4)
    frozen, next_owner = TaskStore(config), TaskStore(config)
    try:
        frozen.start()
        next_owner.start()
        now = dt.datetime(2030, 1, 1)
        epoch = frozen.claim_slot(0, "frozen", now)
        held = frozen._connect()  # the frozen node's connection, mid-transaction
        with held.cursor() as cur:
            cur.execute("SELECT epoch FROM slot_owners WHERE slot = 0 LOCK IN SHARE MODE")
        # When the next owner claims the slot while that transaction is still open
        assert next_owner.claim_slot(0, "next", now) == epoch + 1
        # Then the frozen node's transaction is gone: it can commit nothing
        # (InterfaceError or OperationalError, depending on how the server closed it)
        with pytest.raises(pymysql.err.Error):
            with held.cursor() as cur:
                cur.execute("SELECT 1")
    finally:
        frozen.stop()
        next_owner.stop()
        drop_database(stack, database)
