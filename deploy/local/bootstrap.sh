#!/usr/bin/env bash
# Build the project's virtualenv at <repo>/.venv: idempotent, and fast when nothing changed.
#
#   bash deploy/local/bootstrap.sh
#
# Creates .venv with `python3 -m venv` if it is missing, then installs the SDK and the server
# in editable mode with the dev extras. The pip step is skipped when a stamp in .venv shows
# that the Python version and both pyproject.toml files are unchanged since the last install,
# so a second run downloads nothing. TASKRING_PYTHON picks another interpreter for the venv.
# It also links promtool (Prometheus' rule checker, for the rules test) into .venv/bin: see
# ensure_promtool. And it installs Debian's chromium and chromium-driver, which the console's
# browser tests drive: see ensure_chromium.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
PYTHON="${TASKRING_PYTHON:-python3}"
VENV="$ROOT/.venv"
STAMP="$VENV/.taskring-bootstrap.sha256"

if [[ ! -x "$VENV/bin/python" ]]; then
    echo "bootstrap: creating $VENV with $("$PYTHON" --version 2>&1)"
    "$PYTHON" -m venv "$VENV"
fi

# One bootstrap at a time per tree (colleagues share the working tree).
exec 8>"$VENV/.bootstrap.lock"
flock -w 900 8 || { echo "bootstrap: could not lock $VENV/.bootstrap.lock" >&2; exit 1; }

# promtool checks deploy/prometheus/rules.yml in tests/unit/test_deploy_artifacts.py. Debian's
# `prometheus` package is the one registry package that has it: only its promtool (one binary
# that needs nothing but libc) is taken out of the downloaded .deb, without installing the
# package (no server, no service, no dependencies). It is cached once per machine, like Kafka's
# jars (TASKRING_CACHE_DIR), and linked into .venv/bin. Skipped when a promtool is on PATH or
# already linked. A failure only warns: the rules test then skips, except under CI, where it fails.
ensure_promtool() {
    local cache tmp
    cache="${TASKRING_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/taskring}/promtool"
    if command -v promtool >/dev/null 2>&1 || [[ -x "$VENV/bin/promtool" ]]; then return 0; fi
    if [[ ! -x "$cache/promtool" ]]; then
        if ! command -v apt-get >/dev/null 2>&1; then
            echo "bootstrap: WARNING: no promtool and no apt-get to fetch it; the rules test will skip" >&2
            return 0
        fi
        if ! apt-cache policy prometheus 2>/dev/null | grep -q 'Candidate: [^(]'; then
            echo "bootstrap: apt-get update (prometheus, for promtool, was not in the lists)"
            apt-get -o DPkg::Lock::Timeout=600 update -qq || true
        fi
        echo "bootstrap: fetching promtool from Debian's prometheus package into $cache"
        tmp="$(mktemp -d)"
        if ! (cd "$tmp" && apt-get download -qq prometheus > apt.log 2>&1 \
              && dpkg-deb --fsys-tarfile prometheus_*.deb | tar -x ./usr/bin/promtool \
              && ./usr/bin/promtool --version > /dev/null); then
            cat "$tmp/apt.log" >&2 2>/dev/null || true
            rm -rf "$tmp"
            echo "bootstrap: WARNING: could not fetch promtool; the rules test will skip" >&2
            return 0
        fi
        mkdir -p "$cache"
        # A rename is atomic: two trees bootstrapping at once both end with a whole binary.
        mv "$tmp/usr/bin/promtool" "$cache/promtool.$$" && mv -f "$cache/promtool.$$" "$cache/promtool"
        rm -rf "$tmp"
    fi
    ln -sfn "$cache/promtool" "$VENV/bin/promtool"
    echo "bootstrap: promtool: $("$VENV/bin/promtool" --version 2>&1 | head -1)"
}
ensure_promtool

# tests/integration/test_console.py drives a real headless Chromium through chromedriver.
# Debian's packages are the only browser build this machine can install (nothing may be
# downloaded from elsewhere), so they are installed as packages. Skipped when both binaries
# exist. A failure only warns: the console tests then skip, except under CI, where they fail.
ensure_chromium() {
    if [[ -x /usr/bin/chromium && -x /usr/bin/chromedriver ]]; then return 0; fi
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "bootstrap: WARNING: no chromium and no apt-get to install it; the console tests will skip" >&2
        return 0
    fi
    if ! apt-cache policy chromium-driver 2>/dev/null | grep -q 'Candidate: [^(]'; then
        echo "bootstrap: apt-get update (chromium-driver, for the console tests, was not in the lists)"
        apt-get -o DPkg::Lock::Timeout=600 update -qq || true
    fi
    echo "bootstrap: installing chromium and chromium-driver (Debian) for the console tests"
    local log
    log="$(mktemp)"
    if ! DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
            chromium chromium-driver > "$log" 2>&1; then
        tail -20 "$log" >&2 || true
        rm -f "$log"
        echo "bootstrap: WARNING: could not install chromium; the console tests will skip" >&2
        return 0
    fi
    rm -f "$log"
    echo "bootstrap: $(/usr/bin/chromium --version 2>/dev/null | head -1)"
}
ensure_chromium

want="$( { "$VENV/bin/python" -c 'import sys; print(sys.version)'; cat pyproject.toml sdk/python/pyproject.toml; } | sha256sum | cut -d' ' -f1)"
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]]; then
    echo "bootstrap: .venv is up to date (pyproject files unchanged), nothing installed"
    exit 0
fi

echo "bootstrap: installing sdk/python and .[dev] into .venv (editable)"
start=$(date +%s)
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e sdk/python -e '.[dev]'
echo "$want" > "$STAMP"
echo "bootstrap: done in $(( $(date +%s) - start ))s"
