"""How a client proves who it is: a bearer token on every call, and TLS credentials.

The token goes in the `authorization: Bearer <token>` metadata the dispatcher reads
(dispatcher/auth/grpc_auth.py), added by an interceptor so that every stub on the channel
(tasks and cron rules) sends it. It is an interceptor rather than gRPC call credentials
because call credentials are refused on a plain-text channel, and a token without TLS is
what a local stack may use (on a network, use both: the token is a secret).
"""
from __future__ import annotations

import dataclasses
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
