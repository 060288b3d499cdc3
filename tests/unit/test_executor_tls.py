"""TLS on the leg from a node to its executors: the dispatcher's ExecutorPool dialing a real
Python SDK executor over gRPC, with certificates made by deploy/local/certs.sh (a CA, a server
certificate for 127.0.0.1 and localhost, a client certificate, and an unrelated CA with a
client certificate of its own). No ZooKeeper: the pool is given the executor's address.

Given an executor serving TLS, a pool trusting its CA delivers and one trusting another CA, or
dialing plain text, gets a retryable failure naming the executor and spends nothing else. Given
mutual TLS, only a pool showing a certificate of the executor's client CA gets through. Bad
settings are refused at start, naming the variable.
"""
from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from dispatcher.auth.tls import executor_channel_credentials
from dispatcher.base.clock import Clock
from dispatcher.base.config import ExecutorTlsConfig, NodeConfig, parse_executor_tls
from dispatcher.engine.executor_pool import ExecutorPool
from harness.processes import REPO
from membership import ExecutorInstance
from taskring import Executor, executor_tls_credentials, executor_tls_from_env
from taskring.wire import pb

K = pb.OutcomeKind


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("certs")
    subprocess.run(["bash", str(REPO / "deploy/local/certs.sh"), str(where)], check=True, capture_output=True)
    return where


def serving(certs: Path, *, mutual: bool) -> Executor:
    credentials = executor_tls_credentials(certs / "server.pem", certs / "server.key",
                                           certs / "ca.pem" if mutual else None)
    ex = Executor("shop", zk_hosts=None, credentials=credentials)
    ex.add_handler("send", lambda ctx: None)
    return ex


@pytest.fixture
def tls_executor(certs: Path) -> Iterator[Executor]:
    with serving(certs, mutual=False) as ex:   # started, and stopped after the test
        yield ex


@pytest.fixture
def mutual_executor(certs: Path) -> Iterator[Executor]:
    with serving(certs, mutual=True) as ex:
        yield ex


class OneExecutor:
    def __init__(self, address: str) -> None:
        self.address = address

    def instances(self, namespace: str):
        return (ExecutorInstance("one", self.address, ("send",), 10),)


def deliver(address: str, tls: ExecutorTlsConfig | None) -> pb.Outcome:
    """One delivery through a pool dialing as `tls` says; its one outcome."""
    async def go() -> pb.Outcome:
        pool = ExecutorPool(OneExecutor(address), "n1", now_ms=Clock().now_ms,
                            credentials=executor_channel_credentials(tls) if tls else None,
                            server_name=tls.server_name if tls else None)
        try:
            reservation = pool.reserve("shop", "send", 1)
            assert reservation.total == 1
            d = pb.Delivery(task=pb.Task(task_id="t1", namespace="shop", task_type="send", payload_json="{}"),
                            attempt=1, timeout_ms=5000)
            result = await pool.run(reservation, [d])
            assert result.not_sent == [] and len(result.outcomes) == 1, result
            assert pool.in_flight() == 0
            return result.outcomes[0]
        finally:
            await pool.stop()
    return asyncio.run(go())


def trusting(certs: Path, ca: str = "ca", client: str | None = None, server_name: str | None = None):
    return ExecutorTlsConfig(ca_file=str(certs / f"{ca}.pem"),
                             client_cert_file=str(certs / f"{client}.pem") if client else None,
                             client_key_file=str(certs / f"{client}.key") if client else None,
                             server_name=server_name)


def refused(outcome: pb.Outcome, address: str) -> bool:
    return (outcome.kind == K.OUTCOME_KIND_RETRYABLE_FAILURE and f"executor {address}" in outcome.error
            and "UNAVAILABLE" in outcome.error)


def test_a_pool_trusting_the_executors_ca_delivers_over_tls(certs, tls_executor):
    assert deliver(tls_executor.address, trusting(certs)).kind == K.OUTCOME_KIND_SUCCEEDED


def test_a_pool_trusting_another_ca_or_dialing_plain_text_is_refused(certs, tls_executor):
    address = tls_executor.address
    assert refused(deliver(address, trusting(certs, ca="other-ca")), address)
    assert refused(deliver(address, None), address)


def test_the_name_checked_can_be_set_for_certificates_that_name_a_service(certs, tls_executor):
    address = tls_executor.address
    assert deliver(address, trusting(certs, server_name="localhost")).kind == K.OUTCOME_KIND_SUCCEEDED
    assert refused(deliver(address, trusting(certs, server_name="executors.shop.internal")), address)


def test_mutual_tls_lets_only_a_certificate_of_the_client_ca_through(certs, mutual_executor):
    address = mutual_executor.address
    assert deliver(address, trusting(certs, client="client")).kind == K.OUTCOME_KIND_SUCCEEDED
    assert refused(deliver(address, trusting(certs)), address)
    assert refused(deliver(address, trusting(certs, client="other-client")), address)


def test_a_plain_text_executor_refuses_a_tls_pool(certs):
    ex = Executor("shop", zk_hosts=None)
    ex.add_handler("send", lambda ctx: None)
    with ex:
        assert refused(deliver(ex.address, trusting(certs)), ex.address)
        assert deliver(ex.address, None).kind == K.OUTCOME_KIND_SUCCEEDED


def test_the_nodes_settings_come_from_the_environment_and_go_together(certs):
    assert NodeConfig.from_env({}).executor_tls is None
    ca, cert, key = str(certs / "ca.pem"), str(certs / "client.pem"), str(certs / "client.key")
    tls = NodeConfig.from_env({"TASKRING_EXECUTOR_CA_FILE": ca, "TASKRING_EXECUTOR_CLIENT_CERT_FILE": cert,
                               "TASKRING_EXECUTOR_CLIENT_KEY_FILE": key,
                               "TASKRING_EXECUTOR_SERVER_NAME": "localhost"}).executor_tls
    assert tls == ExecutorTlsConfig(ca_file=ca, client_cert_file=cert, client_key_file=key, server_name="localhost")
    assert "client.key" not in repr(tls)
    with pytest.raises(ValueError, match="^TASKRING_EXECUTOR_CLIENT_CERT_FILE: needs TASKRING_EXECUTOR_CA_FILE"):
        parse_executor_tls({"TASKRING_EXECUTOR_CLIENT_CERT_FILE": cert, "TASKRING_EXECUTOR_CLIENT_KEY_FILE": key})
    with pytest.raises(ValueError, match="^TASKRING_EXECUTOR_SERVER_NAME: needs TASKRING_EXECUTOR_CA_FILE"):
        parse_executor_tls({"TASKRING_EXECUTOR_SERVER_NAME": "localhost"})
    with pytest.raises(ValueError, match="^TASKRING_EXECUTOR_CLIENT_KEY_FILE: is required"):
        parse_executor_tls({"TASKRING_EXECUTOR_CA_FILE": ca, "TASKRING_EXECUTOR_CLIENT_CERT_FILE": cert})
    assert parse_executor_tls({"TASKRING_EXECUTOR_CA_FILE": ""}) is None


def test_a_missing_or_non_pem_file_is_refused_at_start_naming_the_variable(certs, tmp_path):
    not_pem = tmp_path / "not.pem"
    not_pem.write_text("hello")
    with pytest.raises(ValueError, match=r"^TASKRING_EXECUTOR_CA_FILE '.*missing.pem': cannot be read"):
        executor_channel_credentials(ExecutorTlsConfig(ca_file=str(tmp_path / "missing.pem")))
    with pytest.raises(ValueError, match=r"^TASKRING_EXECUTOR_CA_FILE '.*not.pem': holds no PEM certificate"):
        executor_channel_credentials(ExecutorTlsConfig(ca_file=str(not_pem)))
    with pytest.raises(ValueError, match="^TASKRING_EXECUTOR_CLIENT_KEY_FILE .*holds no PEM private key"):
        executor_channel_credentials(ExecutorTlsConfig(ca_file=str(certs / "ca.pem"),
                                                       client_cert_file=str(certs / "client.pem"),
                                                       client_key_file=str(certs / "client.pem")))
    assert isinstance(executor_channel_credentials(trusting(certs, client="client")), grpc.ChannelCredentials)


def test_the_executors_settings_come_from_the_environment_naming_the_variable(certs, tmp_path):
    cert, key, ca = str(certs / "server.pem"), str(certs / "server.key"), str(certs / "ca.pem")
    assert executor_tls_from_env({}) is None
    assert isinstance(executor_tls_from_env({"TASKRING_EXECUTOR_TLS_CERT_FILE": cert,
                                             "TASKRING_EXECUTOR_TLS_KEY_FILE": key,
                                             "TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE": ca}), grpc.ServerCredentials)
    with pytest.raises(ValueError, match="^TASKRING_EXECUTOR_TLS_KEY_FILE: is required"):
        executor_tls_from_env({"TASKRING_EXECUTOR_TLS_CERT_FILE": cert})
    with pytest.raises(ValueError, match="^TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE: needs"):
        executor_tls_from_env({"TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE": ca})
    with pytest.raises(ValueError, match=r"^TASKRING_EXECUTOR_TLS_KEY_FILE '.*nothing': cannot be read"):
        executor_tls_from_env({"TASKRING_EXECUTOR_TLS_CERT_FILE": cert,
                               "TASKRING_EXECUTOR_TLS_KEY_FILE": str(tmp_path / "nothing")})
    with pytest.raises(ValueError, match=r"^key_file '.*server.pem': holds no PEM private key"):
        executor_tls_credentials(cert, cert)
