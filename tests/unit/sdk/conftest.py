"""Fixtures shared by the Python SDK's executor tests."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from taskring import Executor


@pytest.fixture
def make_executor() -> Iterator:
    """Executors of namespace "shop" without ZooKeeper, made by the test and stopped after it."""
    made: list[Executor] = []

    def make(**kwargs) -> Executor:
        ex = Executor("shop", zk_hosts=None, **kwargs)
        made.append(ex)
        return ex

    yield make
    for ex in made:
        ex.stop(grace_s=0)
