"""How a client proves who it is: a bearer token on every call, and TLS credentials; and
the TLS an executor serves the dispatchers with.

The token goes in the `authorization: Bearer <token>` metadata the dispatcher reads
(dispatcher/auth/grpc_auth.py), added by an interceptor so that every stub on the channel
(tasks and cron rules) sends it. It is an interceptor rather than gRPC call credentials
because call credentials are refused on a plain-text channel, and a token without TLS is
what a local stack may use (on a network, use both: the token is a secret).
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import grpc

_KEY = "authorization"


def _with_token(metadata: Any, value: str) -> list[tuple[str, str]]:
    return [*(m for m in (metadata or ()) if m[0] != _KEY), (_KEY, value)]


@dataclasses.dataclass(frozen=True)
class _Details(grpc.ClientCallDetails):
    method: str
    timeout: float | None
    metadata: Any
    credentials: grpc.CallCredentials | None
    wait_for_ready: bool | None
    compression: Any


class BearerToken(grpc.UnaryUnaryClientInterceptor):
    """Adds the token to every unary call of a blocking channel."""

    def __init__(self, token: str) -> None:
        self._value = f"Bearer {token}"

    def intercept_unary_unary(self, continuation, client_call_details, request):
        d = client_call_details
        return continuation(_Details(d.method, d.timeout, _with_token(d.metadata, self._value), d.credentials,
                                     getattr(d, "wait_for_ready", None), getattr(d, "compression", None)), request)


class AsyncBearerToken(grpc.aio.UnaryUnaryClientInterceptor):
    """Adds the token to every unary call of a grpc.aio channel."""

    def __init__(self, token: str) -> None:
        self._value = f"Bearer {token}"

    async def intercept_unary_unary(self, continuation, client_call_details, request):
        d = client_call_details
        metadata = grpc.aio.Metadata(*_with_token(d.metadata, self._value))
        details = grpc.aio.ClientCallDetails(d.method, d.timeout, metadata, d.credentials, d.wait_for_ready)
        return await continuation(details, request)


def tls_credentials(ca_file: str | Path, cert_file: str | Path | None = None,
                    key_file: str | Path | None = None) -> grpc.ChannelCredentials:
    """Channel credentials that trust the dispatchers' CA (`ca_file`, PEM), and show a
    client certificate when the dispatchers want mutual TLS (`cert_file` and `key_file`
    together). Pass them as `Client(..., credentials=...)`."""
    if (cert_file is None) != (key_file is None):
        raise ValueError("tls_credentials: cert_file and key_file go together (a client certificate and its key)")
    root = Path(ca_file).read_bytes()
    cert = Path(cert_file).read_bytes() if cert_file is not None else None
    key = Path(key_file).read_bytes() if key_file is not None else None
    return grpc.ssl_channel_credentials(root_certificates=root, private_key=key, certificate_chain=cert)


def _pem(path: str | Path, option: str, marker: bytes, what: str) -> bytes:
    """gRPC parses PEM only at the first handshake, and a bad file then fails every call
    vaguely: a file that cannot be read or is not PEM is refused here, naming the option."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ValueError(f"{option} {str(path)!r}: cannot be read: {exc.strerror or exc}") from None
    if marker not in data:
        raise ValueError(f"{option} {str(path)!r}: holds no PEM {what}")
    return data


def executor_tls_credentials(cert_file: str | Path, key_file: str | Path,
                             client_ca_file: str | Path | None = None) -> grpc.ServerCredentials:
    """Server credentials for an executor: its certificate chain and key (PEM). With
    `client_ca_file`, mutual TLS: a dispatcher must show a certificate that CA signed, or the
    handshake fails. The dispatchers then dial with TASKRING_EXECUTOR_CA_FILE (and, for mutual
    TLS, TASKRING_EXECUTOR_CLIENT_CERT_FILE/KEY_FILE). Pass as `Executor(..., credentials=...)`."""
    cert = _pem(cert_file, "cert_file", b"-----BEGIN CERTIFICATE-----", "certificate")
    key = _pem(key_file, "key_file", b"PRIVATE KEY-----", "private key")
    ca = (_pem(client_ca_file, "client_ca_file", b"-----BEGIN CERTIFICATE-----", "certificate")
          if client_ca_file is not None else None)
    return grpc.ssl_server_credentials([(key, cert)], root_certificates=ca, require_client_auth=ca is not None)


EXECUTOR_TLS_ENV = ("TASKRING_EXECUTOR_TLS_CERT_FILE", "TASKRING_EXECUTOR_TLS_KEY_FILE",
                    "TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE")


def executor_tls_from_env(env: Mapping[str, str] | None = None) -> grpc.ServerCredentials | None:
    """`executor_tls_credentials` from TASKRING_EXECUTOR_TLS_CERT_FILE and _KEY_FILE (both or
    neither) and TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE (mutual TLS, only with them); None when
    none is set. Empty counts as unset."""
    env = os.environ if env is None else env
    cert, key, ca = (env.get(v) or None for v in EXECUTOR_TLS_ENV)
    if cert is None and key is None:
        if ca is not None:
            raise ValueError("TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE: needs TASKRING_EXECUTOR_TLS_CERT_FILE and"
                             " TASKRING_EXECUTOR_TLS_KEY_FILE (mutual TLS is TLS first)")
        return None
    if cert is None or key is None:
        missing = EXECUTOR_TLS_ENV[0] if cert is None else EXECUTOR_TLS_ENV[1]
        raise ValueError(f"{missing}: is required with the other of TASKRING_EXECUTOR_TLS_CERT_FILE/KEY_FILE")
    try:
        return executor_tls_credentials(cert, key, ca)
    except ValueError as exc:  # name the variable, not the parameter
        message = str(exc)
        for var, option in zip(EXECUTOR_TLS_ENV, ("cert_file", "key_file", "client_ca_file"), strict=True):
            if message.startswith(option + " "):
                message = var + message[len(option):]
        raise ValueError(message) from None
