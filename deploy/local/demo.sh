#!/usr/bin/env bash
# The README's first command: build .venv, bring the local stack up, show that it works.
#
#   bash deploy/local/demo.sh
#
# The stack is left running; stop it with `bash deploy/local/stack.sh down`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

bash deploy/local/bootstrap.sh
TASKRING_BOOTSTRAP_DONE=1 bash deploy/local/stack.sh up

# ---- DEMO STEP (the lead replaces this one line with a real local cluster run) ----
.venv/bin/python deploy/local/smoke.py
