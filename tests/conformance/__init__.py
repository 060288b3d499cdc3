"""The store conformance suite: the contracts of dispatcher/store/interface*.py, one file
per area, each run against every backend, as River's riverdrivertest is per driver.

    tasks.py               the task store's rows (interface.py)
    slots_and_offsets.py   slot ownership, leases, Kafka offsets (interface.py)
    cron.py                cron rules (interface_cron.py)
    dead_letters.py        dead letters (interface_dead_letters.py)
    search.py              task search (interface_search.py)
    audit.py               the audit trail (interface_audit.py)
    replays.py             bulk replay jobs (interface_replays.py)
    stats.py               the per-minute task counts (interface_stats.py)
    policies.py            policies set through the API (interface_policies.py)

world.py holds what they share (the Backend, starting states, the case runner);
backends.py builds a Backend for the twin and for the MariaDB stores.

Not collected by itself (no test_ module, no Test class). A runner subclasses
`StoreConformance` as `Test...` and overrides the `backend` fixture:

- tests/unit/test_store_memory.py: the in-memory twins (memory*.py);
- tests/integration/test_store_mysql.py: the MariaDB stores on a fresh database per test;
- tests/integration/test_store_sharded.py: the MariaDB stores over two shards.
"""
from __future__ import annotations

from tests.conformance.audit import AuditConformance
from tests.conformance.cron import CronConformance
from tests.conformance.dead_letters import DeadLetterConformance
from tests.conformance.policies import PolicyConformance
from tests.conformance.replays import ReplayConformance
from tests.conformance.search import SearchConformance
from tests.conformance.slots_and_offsets import SlotsAndOffsetsConformance
from tests.conformance.stats import StatsConformance
from tests.conformance.tasks import TaskConformance


class StoreConformance(TaskConformance, SlotsAndOffsetsConformance, CronConformance, DeadLetterConformance,
                       SearchConformance, AuditConformance, ReplayConformance, StatsConformance, PolicyConformance):
    """Every area."""
