"""The store conformance suite against MemoryTaskStore, the in-memory twin; and a
check that the protocol, the real store and the twin have not drifted apart."""
from __future__ import annotations

import inspect

import pytest

pytest.register_assert_rewrite("tests.store_conformance")

from dispatcher.store.interface import TaskStoreProtocol  # noqa: E402
from dispatcher.store.memory import MemoryTaskStore  # noqa: E402
from dispatcher.store.mysql import TaskStore  # noqa: E402
from tests.store_conformance import Backend, StoreConformance  # noqa: E402

_DEAD_LETTER_COLUMNS = ("task_id", "slot", "namespace", "task_type", "envelope", "attempts", "last_error",
                        "last_stack_trace", "first_attempt_at", "dead_lettered_at")
"""The columns of the dead letters table (dead_letter_rows) that the suite compares."""
PROTOCOL_METHODS = sorted(name for name, _ in inspect.getmembers(TaskStoreProtocol, inspect.isfunction)
                          if not name.startswith("_"))


class TestMemoryTaskStore(StoreConformance):
    @pytest.fixture
    def backend(self):
        store = MemoryTaskStore()
        store.start()
        yield Backend(store=store, dead_letters=lambda: {tid: {k: row[k] for k in _DEAD_LETTER_COLUMNS}
                                                         for tid, row in store.dead_letter_rows().items()})
        store.stop()


def _parameters(fn) -> list[tuple[str, object, object]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize("implementation", [TaskStore, MemoryTaskStore], ids=lambda c: c.__name__)
def test_implementations_have_the_protocols_methods_and_parameters(implementation):
    assert len(PROTOCOL_METHODS) == 25
    for name in PROTOCOL_METHODS:
        assert hasattr(implementation, name), f"{implementation.__name__} lacks {name}"
        assert _parameters(getattr(implementation, name)) == _parameters(getattr(TaskStoreProtocol, name)), name
