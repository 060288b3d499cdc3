"""An SDK Executor announces itself in the real ZooKeeper, and takes the announcement back.

Dispatchers find executors only through /executors/<namespace>/<instance_id>, so
these are the SDK's claims about that znode: it appears on start with the
address and task types, it comes back by itself after the session is expired,
and it is gone once stop() returns.
"""
from __future__ import annotations

import json
import os
import threading

import grpc
import pytest
from kazoo.client import KazooClient

from harness import faults
from harness.wait import wait_until
from taskring import Executor
from taskring.wire import pb, pb_grpc

pytestmark = pytest.mark.integration

SESSION_TIMEOUT_S = 4.0
DEADLINE_S = 20.0


@pytest.fixture
def zk(zk_hosts):
    client = KazooClient(hosts=zk_hosts, timeout=SESSION_TIMEOUT_S)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


@pytest.fixture
def executors():
    made: list[Executor] = []
    yield made
    for ex in made:
        ex.stop(grace_s=0)


def make_executor(executors: list[Executor], hosts: str, instance_id: str) -> Executor:
    ex = Executor("billing", zk_hosts=hosts, instance_id=instance_id, max_in_flight=8,
                  zk_session_timeout_s=SESSION_TIMEOUT_S)
    executors.append(ex)

    @ex.handler("charge")
    def charge(ctx):
        pass

    @ex.handler("refund")
    async def refund(ctx):
        pass

    return ex


def test_executor_registers_its_address_and_task_types_and_deregisters_on_stop(zk_hosts, zk, executors):
    # Given an executor with two handlers, started against ZooKeeper
    ex = make_executor(executors, zk_hosts, "reg-1")
    ex.start()

    # Then its znode names where to call it and what it runs
    path = "/executors/billing/reg-1"
    assert ex.registration_path == path
    data, stat = zk.get(path)
    info = json.loads(data)
    assert info == {"address": ex.address, "namespace": "billing", "task_types": ["charge", "refund"],
                    "max_in_flight": 8, "pid": os.getpid()}
    assert stat.ephemeralOwner != 0

    # And the address in it answers Execute
    with grpc.insecure_channel(info["address"]) as channel:
        resp = pb_grpc.ExecutorServiceStub(channel).Execute(pb.ExecuteRequest(deliveries=[
            pb.Delivery(task=pb.Task(task_id="t1", namespace="billing", task_type="charge", payload_json="{}"),
                        attempt=1, epoch=1, timeout_ms=5000),
        ]), timeout=10)
    assert resp.outcomes[0].kind == pb.OUTCOME_KIND_SUCCEEDED

    # When it stops, then the znode is gone by the time stop() returns
    ex.stop(grace_s=1)
    assert zk.exists(path) is None


def test_executor_registers_again_after_its_session_expires(zk_hosts, zk, executors):
    # Given a registered executor, and a watcher that records when its znode goes away
    ex = make_executor(executors, zk_hosts, "reg-2")
    ex.start()
    path = "/executors/billing/reg-2"
    _, first = zk.get(path)
    gone = threading.Event()

    def watch(event):
        if event.type == "DELETED":
            gone.set()

    zk.exists(path, watch=watch)

    # When its ZooKeeper session is expired on the server
    registration = ex._registration
    assert registration is not None, "a started executor is registered"
    session = registration._client  # white-box: the session to expire
    faults.expire_session(zk_hosts, session.client_id, SESSION_TIMEOUT_S)

    # Then the znode goes with the old session, and comes back under a new one
    assert gone.wait(DEADLINE_S), "the znode did not disappear with the expired session"

    def back_under_a_new_session() -> bool:
        stat = zk.exists(path)
        return stat is not None and stat.ephemeralOwner not in (0, first.ephemeralOwner)

    wait_until(back_under_a_new_session, DEADLINE_S, "the executor to re-register", 0.02)
    assert json.loads(zk.get(path)[0])["address"] == ex.address

    # And stop() still removes it
    ex.stop(grace_s=1)
    assert zk.exists(path) is None


def test_executor_creates_a_missing_chroot(zk_hosts, zk, executors):
    # Given a hosts string whose chroot does not exist yet
    ex = make_executor(executors, zk_hosts + "/sdk-fresh", "reg-3")

    # When the executor starts, then it creates the chroot and registers under it
    ex.start()
    assert zk.exists("/sdk-fresh/executors/billing/reg-3") is not None
    ex.stop(grace_s=1)
    assert zk.exists("/sdk-fresh/executors/billing/reg-3") is None
