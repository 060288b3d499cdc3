"""The store conformance suite against TaskStore on the real MariaDB, a fresh
database per test (migrations applied, dropped afterwards).

KNOWN_DISCREPANCIES lists the cases the real store fails today, as strict
xfails: each is a bug report with its reproduction, and a fix turns it into an
XPASS that fails the run until the entry is removed.
"""
from __future__ import annotations

import uuid

import pytest

pytest.register_assert_rewrite("tests.store_conformance")

from dispatcher.config import MySQLConfig  # noqa: E402
from dispatcher.store.mysql import TaskStore  # noqa: E402
from tests.store_conformance import Backend, StoreConformance  # noqa: E402

pytestmark = pytest.mark.integration

# Cases the real store fails today, as strict xfails (test name -> reason); empty now.
KNOWN_DISCREPANCIES: dict[str, str] = {}

_DEAD_LETTER_COLUMNS = ("task_id", "slot", "namespace", "task_type", "envelope", "attempts", "last_error",
                        "last_stack_trace", "first_attempt_at", "dead_lettered_at")


class TestMySQLTaskStore(StoreConformance):
    @pytest.fixture
    def backend(self, stack, request):
        reason = KNOWN_DISCREPANCIES.get(request.node.name)
        if reason is not None:
            request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
        database = stack.create_database(f"taskring_conf_{uuid.uuid4().hex[:12]}")
        store = TaskStore(MySQLConfig(host=stack.host, port=stack.mysql_port, user=stack.mysql_user,
                                      password=stack.mysql_password, database=database))
        store.start()

        def dead_letters() -> dict[str, dict]:
            conn = stack.mysql_connect(database)
            try:
                with conn.cursor() as cur:
                    cur.execute(f"SELECT {', '.join(_DEAD_LETTER_COLUMNS)} FROM dead_letters")
                    return {row[0]: dict(zip(_DEAD_LETTER_COLUMNS, row)) for row in cur.fetchall()}
            finally:
                conn.close()

        try:
            yield Backend(store=store, dead_letters=dead_letters)
        finally:
            store.stop()
            stack.drop_database(database)
