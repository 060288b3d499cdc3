"""Every RPC of TaskService and CronService runs the access check before anything else.

Given a node with a tokens file, when any RPC is called without a token, or with a token
not allowed its call, then it answers UNAUTHENTICATED / PERMISSION_DENIED without touching
the store: a new RPC that forgets the check, or its entry in CALL_OF_RPC, fails here.
"""
from __future__ import annotations

import asyncio
import hashlib

import grpc
import pytest

from dispatcher.api.graphs import GraphApi
from dispatcher.api.policies import PolicyApi, TypePolicies
from dispatcher.api.service import TaskApi
from dispatcher.api.validation import Limits
from dispatcher.auth.grpc_auth import Authorizer
from dispatcher.auth.tokens import CALL_OF_RPC, CALLS, parse_tokens
from dispatcher.base.config import NodeConfig
from dispatcher.base.metrics import NodeMetrics
from dispatcher.cron.api import CronApi
from dispatcher.params import api_params
from taskring.wire import pb

SERVICES = ("TaskService", "CronService", "PolicyService", "GraphService")
RPCS = [(service, m.name, m.input_type.name) for service in SERVICES
        for m in pb.DESCRIPTOR.services_by_name[service].methods]


class Untouchable:
    """A store or producer the check must come before."""

    def __getattr__(self, name: str):
        raise AssertionError(f"{name} used before the access check")


class Aborted(Exception):
    pass


class Context:
    def __init__(self, *metadata: tuple[str, str]):
        self._metadata = metadata
        self.code: grpc.StatusCode | None = None
        self.details = ""

    def invocation_metadata(self):
        return self._metadata

    def set_trailing_metadata(self, metadata) -> None:
        pass

    async def abort(self, code: grpc.StatusCode, details: str):
        self.code, self.details = code, details
        raise Aborted


@pytest.fixture
def servicers():
    tokens = parse_tokens({"tokens": [{"name": "nothing-here", "sha256": hashlib.sha256(b"s").hexdigest(),
                                       "admin_role": "viewer"}]})
    auth, config = Authorizer(tokens, NodeMetrics()), NodeConfig.from_env({}, cluster=False)
    store = Untouchable()
    return {"TaskService": TaskApi(params=api_params(config), store=store, producer=store,
                                   metrics=NodeMetrics(), limits=Limits(), auth=auth),
            "CronService": CronApi(node_id=config.node_id, slot_count=config.slot_count,
                                   store=store, limits=Limits(), auth=auth),
            "PolicyService": PolicyApi(TypePolicies(store=store, layers=lambda: store.layers,
                                                    apply_now=lambda: store.apply_now), auth=auth),
            "GraphService": GraphApi(params=api_params(config), graphs=store,
                                     release=lambda *ref: store.release(*ref), limits=Limits(), auth=auth)}


def test_every_rpc_needs_a_known_call():
    assert {name for _, name, _ in RPCS} == set(CALL_OF_RPC)
    assert set(CALL_OF_RPC.values()) == set(CALLS)


@pytest.mark.parametrize("service, method, request_type", RPCS)
def test_every_rpc_checks_the_token_first(servicers, service, method, request_type):
    for context, code in [(Context(), grpc.StatusCode.UNAUTHENTICATED),
                          (Context(("authorization", "Bearer wrong")), grpc.StatusCode.UNAUTHENTICATED),
                          (Context(("authorization", "Bearer s")), grpc.StatusCode.PERMISSION_DENIED)]:
        call = getattr(servicers[service], method)
        with pytest.raises(Aborted):
            asyncio.run(call(getattr(pb, request_type)(), context))
        assert context.code == code, (method, context.code, context.details)
    assert context.details == f"token 'nothing-here' may not {CALL_OF_RPC[method]}"
