#!/usr/bin/env bash
# The static checks: ruff (lint + import order) and mypy, both configured in pyproject.toml.
#
#   bash deploy/local/lint.sh          # builds .venv first (bootstrap.sh: ruff and mypy are dev extras)
#   .venv/bin/ruff check --fix .       # to apply ruff's safe fixes (review them)
#
# Exits non-zero if either tool reports anything; both always run. .ci/run calls this before the tests.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

if [[ "${TASKRING_BOOTSTRAP_DONE:-}" != 1 ]]; then
    bash deploy/local/bootstrap.sh
fi

rc=0
echo "lint: ruff $(.venv/bin/ruff --version | cut -d' ' -f2)"
.venv/bin/ruff check . || rc=1
echo "lint: $(.venv/bin/mypy --version | cut -d' ' -f1-2)"
.venv/bin/mypy || rc=1
if ((rc != 0)); then
    echo "lint.sh: ruff or mypy reported problems (above)" >&2
fi
exit "$rc"
