#!/usr/bin/env bash
# The Node SDK's tests, as CI runs them: install (only when node_modules is
# missing or older than package-lock.json), build, run `node --test`, exit with
# its status. The ZooKeeper and dispatcher integration tests run only when
# TASKRING_IT_ZK is set (e.g. TASKRING_IT_ZK=127.0.0.1:22181).
set -euo pipefail
cd "$(dirname "$0")"

stamp=node_modules/.package-lock.json  # npm rewrites it on every install
if [[ ! -d node_modules || ! -f $stamp || package-lock.json -nt $stamp ]]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
npm run --silent build
status=0
node --test test/*.test.js || status=$?
exit "$status"
