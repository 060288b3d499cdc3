"""An open console, as load: the JSON endpoints the console's pages fetch, every few seconds,
for the benchmark that measures what an SRE watching the console costs the hot path."""
from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request

# What the console's pages poll (dispatcher/admin/console/): the overview's figures, the live
# view, the failures page, the bulk replays and the audit trail.
PATHS = ("/api/stats?hours=1", "/api/live", "/ring", "/api/dead-letters/groups", "/api/bulk-replays",
         "/api/audit?limit=50")


class ConsoleRefresher:
    def __init__(self, admin_url: str, interval_s: float, token: str | None = None):
        self._admin = admin_url.rstrip("/")
        self._interval_s = interval_s
        self._token = token
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.requests = 0
        self.failures: dict[str, int] = {}
        self.seconds = 0.0

    def start(self) -> ConsoleRefresher:
        self._thread = threading.Thread(target=self._run, name="console-refresher", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> dict:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)
        return {"interval_s": self._interval_s, "requests": self.requests, "failures": self.failures,
                "mean_response_ms": round(1000 * self.seconds / self.requests, 1) if self.requests else None,
                "paths": list(PATHS)}

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            for path in PATHS:
                request = urllib.request.Request(self._admin + path)
                if self._token:
                    request.add_header("Authorization", f"Bearer {self._token}")
                t0 = time.monotonic()
                try:
                    with urllib.request.urlopen(request, timeout=10) as response:
                        response.read()
                except (urllib.error.URLError, OSError) as exc:
                    key = f"{path}: {getattr(exc, 'code', type(exc).__name__)}"
                    self.failures[key] = self.failures.get(key, 0) + 1
                self.seconds += time.monotonic() - t0
                self.requests += 1
            self._stop.wait(max(0.0, self._interval_s - (time.monotonic() - started)))
