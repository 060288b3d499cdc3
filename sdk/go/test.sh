#!/usr/bin/env bash
# CI entry point of the Go SDK: vet, then every test (the shared vectors in
# ../vectors included). Installs nothing: go only fills its module and build
# caches. The ZooKeeper integration tests run when TASKRING_IT_ZK is set
# (e.g. TASKRING_IT_ZK=127.0.0.1:22181); server validation vectors when
# TASKRING_IT_NODES names a dispatcher. Exits with the status of the first failure.
set -euo pipefail
cd "$(dirname "$0")"
go vet ./...
# -count=1: a CI run must really run the integration tests, never replay a cached pass.
go test -count=1 "$@" ./...
