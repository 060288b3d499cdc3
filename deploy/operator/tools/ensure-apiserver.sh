#!/usr/bin/env bash
# Prints, on stdout, the path of the test Kubernetes API server (apiserver/main.go: etcd embedded
# and the apiextensions API server), building it first when missing, into
# ${XDG_CACHE_HOME:-$HOME/.cache}/taskring/. The operator's end-to-end test
# (tests/integration/test_operator.py) runs it:
#
#   apiserver="$(deploy/operator/tools/ensure-apiserver.sh)"
#   "$apiserver" --kubeconfig /tmp/kubeconfig &
#
# Idempotent: the binary is named after its sources, so a second run builds nothing, and editing
# them builds a new one. Needs only `go` and the Go module proxy; the first build takes a few
# minutes on two cores (k8s.io/apiextensions-apiserver and etcd's server). Build output goes to stderr.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/taskring"
src="$here/apiserver"

log() { echo "ensure-apiserver: $*" >&2; }
command -v go >/dev/null 2>&1 || { log "go is not on PATH"; exit 1; }
mkdir -p "$cache"

hash=$(cat "$src/go.mod" "$src/go.sum" "$src/main.go" | sha256sum | cut -c1-16)
out="$cache/k8s-apiserver-$hash"
if [[ ! -x "$out" ]]; then
    start=$(date +%s)
    log "building the test API server into $out ..."
    tmp="$out.tmp.$$"
    # Not -trimpath: nothing needs it, and the build cache is shared with the chart's tools.
    (cd "$src" && go build -o "$tmp" .) >&2 || { rm -f "$tmp"; log "building the test API server failed"; exit 1; }
    mv -f "$tmp" "$out"   # atomic: two builds at once both end with a whole binary
    log "built in $(( $(date +%s) - start ))s"
fi
echo "$out"
