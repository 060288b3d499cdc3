"""A client of the admin endpoint's operations API (dispatcher/admin/ops_routes.py), for the
`taskring` commands: the same tokens as the console, errors as the endpoint says them."""
from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.parse
import urllib.request


class AdminError(Exception):
    """The endpoint answered an error (status and its message), or could not be reached (status 0)."""

    def __init__(self, status: int, message: str):
        self.status = status
        super().__init__(f"HTTP {status}: {message}" if status else message)


def https_context(ca_file: str | None = None, cert_file: str | None = None,
                  key_file: str | None = None) -> ssl.SSLContext | None:
    """What a command needs to reach an HTTPS admin endpoint: the CA to trust (None: the
    system's), and the client certificate an endpoint under mutual TLS asks for. None when
    nothing is set (plain http, or the system's CAs). AdminError names a bad option."""
    ca_file, cert_file, key_file = ca_file or None, cert_file or None, key_file or None   # empty is unset
    if (cert_file is None) != (key_file is None):
        missing = ("--cert-file (TASKRING_ADMIN_CERT_FILE)" if cert_file is None
                   else "--key-file (TASKRING_ADMIN_KEY_FILE)")
        raise AdminError(0, f"{missing}: a client certificate and its key go together")
    if ca_file is None and cert_file is None:
        return None
    try:
        context = ssl.create_default_context(cafile=ca_file)
    except (OSError, ssl.SSLError) as exc:
        raise AdminError(0, f"--ca-file (TASKRING_ADMIN_CA_FILE) {ca_file!r}: cannot be loaded: {exc}") from None
    if cert_file is not None:
        try:
            context.load_cert_chain(cert_file, key_file)
        except (OSError, ssl.SSLError) as exc:
            raise AdminError(0, f"--cert-file/--key-file {cert_file!r}: cannot be loaded: {exc}") from None
    return context


class AdminClient:
    def __init__(self, base_url: str, token: str | None = None, ca_file: str | None = None, timeout_s: float = 30,
                 cert_file: str | None = None, key_file: str | None = None):
        self._base = base_url.rstrip("/")
        self._token = token
        self._timeout_s = timeout_s
        self._context = https_context(ca_file, cert_file, key_file)

    def get(self, path: str, **query: object) -> dict:
        shown = {k: str(v) for k, v in query.items() if v not in (None, "")}
        return self._call("GET", path + ("?" + urllib.parse.urlencode(shown) if shown else ""), None)

    def post(self, path: str, body: dict) -> dict:
        return self._call("POST", path, body)

    def _call(self, method: str, path: str, body: dict | None) -> dict:
        request = urllib.request.Request(self._base + path, method=method,
                                         data=json.dumps(body).encode() if body is not None else None)
        request.add_header("Content-Type", "application/json")
        if self._token:
            request.add_header("Authorization", f"Bearer {self._token}")
        try:
            with urllib.request.urlopen(request, timeout=self._timeout_s, context=self._context) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            text = exc.read().decode(errors="replace")
            try:
                message = json.loads(text).get("error", text)
            except ValueError:
                message = text
            raise AdminError(exc.code, message) from None
        except OSError as exc:
            raise AdminError(0, f"cannot reach {self._base}: {exc}") from None
