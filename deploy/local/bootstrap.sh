#!/usr/bin/env bash
# Build the project's virtualenv at <repo>/.venv: idempotent, and fast when nothing changed.
#
#   bash deploy/local/bootstrap.sh
#
# Creates .venv with `python3 -m venv` if it is missing, then installs the SDK and the server
# in editable mode with the dev extras. The pip step is skipped when a stamp in .venv shows
# that the Python version and both pyproject.toml files are unchanged since the last install,
# so a second run downloads nothing. TASKRING_PYTHON picks another interpreter for the venv.
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
