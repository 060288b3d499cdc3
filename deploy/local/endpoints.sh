# The local stack's endpoints for the shell, written once: sourced by deploy/local/stack.sh,
# sdk/test.sh and sdk/java/e2e.sh. The environment overrides each default. They are the node's
# own defaults (dispatcher/base/config.py, which harness/stack.py reads for Python); a unit test
# (tests/unit/test_harness.py) checks that the two agree.
export TASKRING_ZK_PORT="${TASKRING_ZK_PORT:-22181}"
export TASKRING_KAFKA_PORT="${TASKRING_KAFKA_PORT:-29092}"
export TASKRING_KAFKA_CONTROLLER_PORT="${TASKRING_KAFKA_CONTROLLER_PORT:-29093}"
export TASKRING_MYSQL_PORT="${TASKRING_MYSQL_PORT:-23306}"
# The task store's second shard (a second MariaDB server), for tests and benchmarks of a sharded store.
export TASKRING_MYSQL_SHARD2_PORT="${TASKRING_MYSQL_SHARD2_PORT:-23307}"
