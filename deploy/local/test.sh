#!/usr/bin/env bash
# THE test command: build .venv, bring the local stack up, run pytest.
#
#   bash deploy/local/test.sh                       # the SDK suites (sdk/test.sh), then pytest tests -q
#   bash deploy/local/test.sh tests/integration -x  # extra arguments go to pytest (instead of `tests`)
#
# Exits with pytest's code, except that "no tests collected" (pytest's 5) is a failure (1).
# The stack is left running; stop it with `bash deploy/local/stack.sh down`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

bash deploy/local/bootstrap.sh
TASKRING_BOOTSTRAP_DONE=1 bash deploy/local/stack.sh up

sdk_rc=0
if (($# == 0)); then
    # The whole suite: the Go, Java and Node SDKs first (their own runners, the shared
    # vectors, their ZooKeeper tests), then pytest, whose summary stays the last line.
    set -- tests
    bash sdk/test.sh || sdk_rc=$?
fi
set +e
.venv/bin/python -m pytest -q "$@"
rc=$?
set -e
if ((rc == 5)); then
    echo "test.sh: pytest collected no tests: treating that as a failure" >&2
    exit 1
fi
if ((rc == 0 && sdk_rc != 0)); then
    echo "test.sh: pytest passed, but the SDK suites failed (see 'sdk:' above)" >&2
    exit "$sdk_rc"
fi
exit "$rc"
