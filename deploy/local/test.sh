#!/usr/bin/env bash
# THE test command: build .venv, bring the local stack up, run the suite.
#
#   bash deploy/local/test.sh                       # the quick suite: SDK suites, then pytest in two parts
#   bash deploy/local/test.sh --full                # the same, then the fault tier (what CI runs)
#   bash deploy/local/test.sh tests/integration -x  # extra arguments go to one plain pytest run instead
#
# The quick suite is everything that claims behaviour except the fault tier:
#   1. the Go, Java and Node SDK suites (sdk/test.sh: their runners, the shared vectors);
#   2. pytest on two workers (pytest-xdist, a file per worker at a time) for every test not
#      marked `serial` or `faults`: each worker makes its own world (ZooKeeper chroot, database,
#      topics: tests/conftest.py), so they never share state;
#   3. pytest alone on the machine for the tests marked `serial` (they stop the stack's
#      ZooKeeper, or bound a recovery by a session timeout that a busy box would stretch).
# The fault tier (marker `faults`: the fault matrix's short rows and the cron fault soak) runs
# alone after that with --full; the matrix's long rows stay opt-in (TASKRING_FAULT_MATRIX=full).
# How long each part takes is in the README (Tests).
#
# Exits with the first failing part's code; "no tests collected" (pytest's 5) is a failure (1).
# The stack is left running; stop it with `bash deploy/local/stack.sh down`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

bash deploy/local/bootstrap.sh
TASKRING_BOOTSTRAP_DONE=1 bash deploy/local/stack.sh up

rc=0
note_failure() {  # keep the first failure's code; a run that collected nothing is a failure
    local code=$1 what=$2
    if ((code == 5)); then
        echo "test.sh: $what collected no tests: treating that as a failure" >&2
        code=1
    fi
    if ((code != 0)); then
        echo "test.sh: $what failed ($code)" >&2
        ((rc == 0)) && rc=$code
    fi
    return 0
}

timed() {  # timed <name> <command...>: run it, print how long it took, record a failure
    local name=$1 start code=0
    shift
    start=$(date +%s)
    "$@" || code=$?
    echo "test.sh: $name took $(($(date +%s) - start)) s"
    note_failure "$code" "$name"
}

if (($# > 0)) && [[ "$1" != "--full" ]]; then
    timed "pytest $*" .venv/bin/python -m pytest -q "$@"
    exit "$rc"
fi
full=0
[[ "${1:-}" == "--full" ]] && full=1

timed "sdk suites" bash sdk/test.sh
timed "pytest, parallel part" .venv/bin/python -m pytest -q -n 2 --dist loadfile -m "not serial and not faults" tests
timed "pytest, serial part" .venv/bin/python -m pytest -q -m "serial and not faults" tests
if ((full)); then
    timed "pytest, fault tier" .venv/bin/python -m pytest -q -m faults tests
fi
exit "$rc"
