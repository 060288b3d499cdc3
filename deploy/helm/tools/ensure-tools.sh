#!/usr/bin/env bash
# Prints, on stdout, the paths of the tools that validate the Helm chart
# offline, building whichever is missing into ${XDG_CACHE_HOME:-$HOME/.cache}/taskring/:
#
#   helm=<path>         helm built from source through the Go module proxy
#   k8svalidate=<path>  the strict typed validator in k8svalidate/ (see its main.go)
#
# Idempotent: a second run builds nothing and prints the same paths. Build
# output and notes go to stderr. Needs only `go` (the machine's own toolchain)
# and the Go module proxy. Use it as:
#
#   eval "$(deploy/helm/tools/ensure-tools.sh)"
#   "$helm" template rel deploy/helm/CHART | "$k8svalidate" --allow-kind monitoring.coreos.com/v1/ServiceMonitor
set -euo pipefail

HELM_VERSION=v4.3.2          # helm.sh/helm/v4, as the package notes say to take
HELM_V3_FALLBACK=v3.21.4     # helm.sh/helm/v3, used only if v4 does not build

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/taskring"

log() { echo "ensure-tools: $*" >&2; }

command -v go >/dev/null 2>&1 || { log "go is not on PATH"; exit 1; }
mkdir -p "$cache"

# go_install MODULE_PATH VERSION DIR: installs MODULE_PATH@VERSION into DIR.
go_install() {
  local pkg=$1 version=$2 dir=$3 start
  start=$(date +%s)
  log "building $pkg@$version into $dir (a few minutes) ..."
  # Run outside any module so the repo's go.mod/go.work cannot interfere.
  if (cd "$cache" && GOBIN="$dir" go install "$pkg@$version") >&2; then
    log "built $pkg@$version in $(( $(date +%s) - start ))s"
  else
    log "building $pkg@$version failed after $(( $(date +%s) - start ))s"
    return 1
  fi
}

ensure_helm() {
  local v4="$cache/helm-$HELM_VERSION" v3="$cache/helm-$HELM_V3_FALLBACK"
  if [[ -x "$v4/helm" ]]; then echo "$v4/helm"; return; fi
  if [[ -x "$v3/helm" ]]; then
    log "using the helm $HELM_V3_FALLBACK fallback already built (remove $v3 to retry $HELM_VERSION)"
    echo "$v3/helm"; return
  fi
  if go_install helm.sh/helm/v4/cmd/helm "$HELM_VERSION" "$v4"; then
    echo "$v4/helm"; return
  fi
  log "falling back to helm $HELM_V3_FALLBACK"
  go_install helm.sh/helm/v3/cmd/helm "$HELM_V3_FALLBACK" "$v3"
  echo "$v3/helm"
}

ensure_k8svalidate() {
  local src="$here/k8svalidate" hash out tmp start
  # The binary is named after its sources, so editing them builds a new one.
  hash=$(cat "$src/go.mod" "$src/go.sum" "$src/main.go" | sha256sum | cut -c1-16)
  out="$cache/k8svalidate-$hash"
  if [[ ! -x "$out" ]]; then
    start=$(date +%s)
    log "building k8svalidate into $out ..."
    tmp="$out.tmp.$$"
    (cd "$src" && go build -o "$tmp" .) >&2 || { rm -f "$tmp"; log "building k8svalidate failed"; exit 1; }
    mv -f "$tmp" "$out"
    log "built k8svalidate in $(( $(date +%s) - start ))s"
  fi
  echo "$out"
}

helm_path=$(ensure_helm)
validator_path=$(ensure_k8svalidate)
echo "helm=$helm_path"
echo "k8svalidate=$validator_path"
