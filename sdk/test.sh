#!/usr/bin/env bash
# The Go, Java and Node SDKs' own test suites (each reads the shared vectors in
# sdk/vectors), with their ZooKeeper integration tests on against the local stack.
# deploy/local/test.sh runs this before pytest; it needs the stack up.
#
#   bash sdk/test.sh            # all three
#   bash sdk/test.sh go node    # some
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../deploy/local/endpoints.sh
source "$here/../deploy/local/endpoints.sh"
export TASKRING_IT_ZK="${TASKRING_IT_ZK:-127.0.0.1:$TASKRING_ZK_PORT}"
(($# > 0)) || set -- go java node
failed=()
for sdk in "$@"; do
    [[ -x "$here/$sdk/test.sh" || -f "$here/$sdk/test.sh" ]] || { echo "sdk/test.sh: no SDK '$sdk'" >&2; exit 2; }
    echo "sdk: $sdk: $(date -Is) start"
    t0=$SECONDS
    if bash "$here/$sdk/test.sh"; then
        echo "sdk: $sdk: passed in $((SECONDS - t0))s"
    else
        echo "sdk: $sdk: FAILED in $((SECONDS - t0))s" >&2
        failed+=("$sdk")
    fi
done
if ((${#failed[@]})); then
    echo "sdk/test.sh: failed: ${failed[*]}" >&2
    exit 1
fi
