"""The TLS settings of the admin commands (`taskring ring`, `taskring task|dlq|audit|stats`):
nothing set is plain http, a CA alone verifies the node, a client certificate needs its key,
and a file that does not load is named with its option."""
from __future__ import annotations

import ssl
import subprocess
from pathlib import Path

import pytest

from harness.processes import REPO
from taskring_cli.admin_client import AdminError, https_context


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("certs")
    subprocess.run(["bash", str(REPO / "deploy/local/certs.sh"), str(where)], check=True, capture_output=True)
    return where


def test_nothing_set_or_empty_is_no_context():
    assert https_context() is None
    assert https_context("", "", "") is None


def test_a_ca_and_a_client_certificate_make_one_verifying_context(certs):
    context = https_context(str(certs / "ca.pem"), str(certs / "client.pem"), str(certs / "client.key"))
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert any("taskring local CA" in str(c.get("subject")) for c in context.get_ca_certs())


def test_half_a_client_certificate_or_a_bad_file_is_named(certs, tmp_path):
    with pytest.raises(AdminError, match=r"--key-file \(TASKRING_ADMIN_KEY_FILE\): a client certificate and its key"):
        https_context(str(certs / "ca.pem"), cert_file=str(certs / "client.pem"))
    with pytest.raises(AdminError, match=r"--cert-file \(TASKRING_ADMIN_CERT_FILE\)"):
        https_context(key_file=str(certs / "client.key"))
    with pytest.raises(AdminError, match=r"--ca-file \(TASKRING_ADMIN_CA_FILE\) '.*missing.pem': cannot be loaded"):
        https_context(str(tmp_path / "missing.pem"))
    with pytest.raises(AdminError, match=r"--cert-file/--key-file '.*ca.pem': cannot be loaded"):
        https_context(str(certs / "ca.pem"), str(certs / "ca.pem"), str(certs / "client.key"))
