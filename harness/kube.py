"""A real Kubernetes API server for tests, and a small client of its REST API.

`ApiServer` runs deploy/operator/tools/apiserver (etcd embedded, and the apiextensions API server:
CRDs, custom resources with their OpenAPI validation, the status subresource, watches and
finalizers), built by deploy/operator/tools/ensure-apiserver.sh, and waits for the kubeconfig it
writes once it serves. `KubeRest` is just enough HTTP for a test to apply a CRD and create, read,
patch and delete custom resources, seeing the server's refusals as they are (status and message).
"""
from __future__ import annotations

import json
import ssl
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.processes import REPO, ChildProcess, tail
from harness.wait import wait_until

ENSURE = REPO / "deploy" / "operator" / "tools" / "ensure-apiserver.sh"


def ensure_apiserver() -> Path:
    """The test API server's binary, built if missing (the first build takes minutes)."""
    done = subprocess.run(["bash", str(ENSURE)], capture_output=True, text=True, timeout=1500)
    if done.returncode != 0:
        raise RuntimeError(f"{ENSURE} failed:\n{done.stderr[-4000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


@dataclass(frozen=True)
class Reply:
    status: int
    body: dict[str, Any]

    @property
    def message(self) -> str:
        return str(self.body.get("message", ""))


class KubeRest:
    """The REST API at the kubeconfig's server, with its bearer token."""

    def __init__(self, kubeconfig: Path):
        config = yaml.safe_load(kubeconfig.read_text())
        self.server = config["clusters"][0]["cluster"]["server"]
        self._token = config["users"][0]["user"]["token"]
        # The test server's certificate is self-signed for the loopback only.
        self._tls = ssl.create_default_context()
        self._tls.check_hostname = False
        self._tls.verify_mode = ssl.CERT_NONE

    def call(self, method: str, path: str, body: object = None, content_type: str = "application/json") -> Reply:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method,
                                     headers={"Authorization": f"Bearer {self._token}", "Content-Type": content_type,
                                              "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, context=self._tls, timeout=30) as resp:
                return Reply(resp.status, json.loads(resp.read() or b"{}"))
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                parsed = json.loads(raw)
            except ValueError:
                parsed = {"message": raw.decode(errors="replace")}
            return Reply(e.code, parsed)

    def merge_patch(self, path: str, patch: object) -> Reply:
        return self.call("PATCH", path, patch, "application/merge-patch+json")

    def apply_crd(self, manifest: dict[str, Any], timeout_s: float = 30.0) -> None:
        """Create the CRD and wait until it is Established (its resources are served)."""
        created = self.call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", manifest)
        if created.status not in (201, 409):
            raise RuntimeError(f"creating the CRD: {created.status} {created.message}")
        path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{manifest['metadata']['name']}"

        def established() -> bool:
            conds = self.call("GET", path).body.get("status", {}).get("conditions") or []
            return any(c["type"] == "Established" and c["status"] == "True" for c in conds)
        wait_until(established, timeout_s, "the CRD to be Established")


class ApiServer:
    """The test API server as a child process; `kubeconfig` is ready once `start()` returns."""

    def __init__(self, binary: Path, workdir: Path):
        self.kubeconfig = workdir / "kubeconfig"
        self.proc = ChildProcess("apiserver", [str(binary), "--kubeconfig", str(self.kubeconfig),
                                               "--data-dir", str(workdir / "data")], workdir / "apiserver.log")

    def start(self, timeout_s: float = 120.0) -> ApiServer:
        self.proc.start()

        def ready() -> bool:
            if self.proc.started.poll() is not None:
                raise RuntimeError(f"the API server exited: {tail(self.proc.log_path)}")
            return self.kubeconfig.exists()
        wait_until(ready, timeout_s, "the API server's kubeconfig", interval_s=0.2)
        return self

    def stop(self) -> None:
        self.proc.stop()
