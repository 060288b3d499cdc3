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


class AdminClient:
    def __init__(self, base_url: str, token: str | None = None, ca_file: str | None = None, timeout_s: float = 30):
        self._base = base_url.rstrip("/")
        self._token = token
        self._timeout_s = timeout_s
        self._context = ssl.create_default_context(cafile=ca_file) if ca_file else None

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
