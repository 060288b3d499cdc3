#!/usr/bin/env bash
# The README's first command: build .venv, bring the local stack up, prove each server works,
# then run a local 3-node taskring cluster doing real work (`taskring demo`, harness/demo.py).
#
#   bash deploy/local/demo.sh
#
# Exits non-zero if any step fails or any demo task does not end as expected. The demo stops
# its nodes at the end (TASKRING_DEMO_KEEP=1 leaves them running); the stack is left running:
# stop it with `bash deploy/local/stack.sh down`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

bash deploy/local/bootstrap.sh
TASKRING_BOOTSTRAP_DONE=1 bash deploy/local/stack.sh up

.venv/bin/python deploy/local/smoke.py
.venv/bin/taskring demo
