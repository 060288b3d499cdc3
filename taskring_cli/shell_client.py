"""The SDK client of the shell commands (`taskring submit/get`, `taskring cron`), secured from
the environment like a service's would be (docs/security.md): a token and TLS files are
never command-line arguments, which every user of the machine can read in `ps`.

    TASKRING_TOKEN              sent as `authorization: Bearer <token>`
    TASKRING_CA_FILE            TLS: the CA the node's certificate is checked against
    TASKRING_CLIENT_CERT_FILE   mutual TLS: the client certificate ...
    TASKRING_CLIENT_KEY_FILE    ... and its key
"""
from __future__ import annotations

import os
from collections.abc import Mapping

from taskring import Client, tls_credentials


def shell_client(target: str, environ: Mapping[str, str] | None = None) -> Client:
    env = os.environ if environ is None else environ
    ca = env.get("TASKRING_CA_FILE") or None
    cert, key = env.get("TASKRING_CLIENT_CERT_FILE") or None, env.get("TASKRING_CLIENT_KEY_FILE") or None
    if ca is None and (cert or key):
        raise ValueError("TASKRING_CLIENT_CERT_FILE/KEY_FILE: need TASKRING_CA_FILE (mutual TLS is TLS first)")
    credentials = tls_credentials(ca, cert, key) if ca is not None else None
    return Client(target, credentials=credentials, token=env.get("TASKRING_TOKEN") or None)
