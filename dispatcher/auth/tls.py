"""TLS of a node's two listeners, built from TlsConfig's PEM files (read once, at start),
and of the calls it makes to the executors (ExecutorTlsConfig).

gRPC: with a client CA, a client without a certificate that CA signed fails the handshake
(mutual TLS). The admin endpoint asks for a client certificate but lets the handshake
through without one, so that the probes stay open to Kubernetes (whose HTTPS probes show
no certificate); every other route then answers 401 (dispatcher/admin/server.py). A
certificate that is shown and does not verify fails the handshake on both.
"""
from __future__ import annotations

import ssl
from pathlib import Path

import grpc

from dispatcher.base.config import ExecutorTlsConfig, TlsConfig


def _read(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ValueError(f"{what} {path!r}: cannot be read: {exc.strerror or exc}") from None


def grpc_server_credentials(tls: TlsConfig) -> grpc.ServerCredentials:
    key = _read(tls.key_file, "TASKRING_TLS_KEY_FILE")
    cert = _read(tls.cert_file, "TASKRING_TLS_CERT_FILE")
    ca = _read(tls.client_ca_file, "TASKRING_TLS_CLIENT_CA_FILE") if tls.client_ca_file else None
    return grpc.ssl_server_credentials([(key, cert)], root_certificates=ca, require_client_auth=ca is not None)


def admin_ssl_context(tls: TlsConfig) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(tls.cert_file, tls.key_file)
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(f"TASKRING_TLS_CERT_FILE/KEY_FILE {tls.cert_file!r}: cannot be loaded: {exc}") from None
    if tls.client_ca_file:
        try:
            context.load_verify_locations(cafile=tls.client_ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(f"TASKRING_TLS_CLIENT_CA_FILE {tls.client_ca_file!r}: cannot be loaded: {exc}") \
                from None
        context.verify_mode = ssl.CERT_OPTIONAL  # required by the server for all but the probes
    return context


def _pem(path: str, var: str, marker: bytes, what: str) -> bytes:
    """Read a PEM file. gRPC parses the credentials only at the first handshake, and then
    fails every call with a vague UNAVAILABLE: a file that is not PEM is refused at start."""
    data = _read(path, var)
    if marker not in data:
        raise ValueError(f"{var} {path!r}: holds no PEM {what}")
    return data


def executor_channel_credentials(tls: ExecutorTlsConfig) -> grpc.ChannelCredentials:
    """Trust the executors' CA; show the node's client certificate when one is configured
    (executors that require mutual TLS refuse the handshake without it)."""
    ca = _pem(tls.ca_file, "TASKRING_EXECUTOR_CA_FILE", b"-----BEGIN CERTIFICATE-----", "certificate")
    cert = key = None
    if tls.client_cert_file is not None and tls.client_key_file is not None:
        cert = _pem(tls.client_cert_file, "TASKRING_EXECUTOR_CLIENT_CERT_FILE", b"-----BEGIN CERTIFICATE-----",
                    "certificate")
        key = _pem(tls.client_key_file, "TASKRING_EXECUTOR_CLIENT_KEY_FILE", b"PRIVATE KEY-----", "private key")
    return grpc.ssl_channel_credentials(root_certificates=ca, private_key=key, certificate_chain=cert)
