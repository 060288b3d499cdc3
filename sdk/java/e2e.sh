#!/usr/bin/env bash
# The Java SDK against a real dispatcher: starts one `taskring node --single` on the local stack
# (bash deploy/local/stack.sh up first), then runs every Java test with the integration tests on
# (RegistrationIT, ServerValidationIT, EndToEndIT). The node gets its own MySQL database, Kafka
# topics and ZooKeeper chroot, named after this run, so other users of the stack are not
# disturbed; all three and the node are removed on exit. Exits with the tests' status.
#
#   bash sdk/java/e2e.sh          (PYTHON=... picks the interpreter; default <repo>/.venv/bin/python)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
py="${PYTHON:-$root/.venv/bin/python}"
# shellcheck source=../../deploy/local/endpoints.sh
source "$root/deploy/local/endpoints.sh"
zk_hosts="127.0.0.1:$TASKRING_ZK_PORT"
kafka="127.0.0.1:$TASKRING_KAFKA_PORT"
mysql_port="$TASKRING_MYSQL_PORT"
run="java-e2e-$$"
db="taskring_java_e2e_$$"
prefix="$run.tasks"
chroot="/$run"
mkdir -p "$here/target"
log="$here/target/e2e-node.log"
free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
grpc_port=$(free_port)
admin_port=$(free_port)
node_pid=""

cleanup() {
    set +e
    if [[ -n "$node_pid" ]]; then
        kill "$node_pid" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$node_pid" 2>/dev/null || break; sleep 0.2; done
        kill -9 "$node_pid" 2>/dev/null
    fi
    (cd "$root" && DB="$db" PREFIX="$prefix" CHROOT="$chroot" ZK="$zk_hosts" KAFKA="$kafka" MYSQL_PORT="$mysql_port" "$py" - <<'EOF'
import os, pymysql
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient
conn = pymysql.connect(host="127.0.0.1", port=int(os.environ["MYSQL_PORT"]), user="root", password="")
with conn.cursor() as cur:
    cur.execute(f"DROP DATABASE IF EXISTS `{os.environ['DB']}`")
conn.close()
admin = AdminClient({"bootstrap.servers": os.environ["KAFKA"]})
topics = [f"{os.environ['PREFIX']}.{p}" for p in ("high", "normal", "low")]
for f in admin.delete_topics(topics, operation_timeout=30).values():
    try:
        f.result(60)
    except Exception:
        pass
zk = KazooClient(hosts=os.environ["ZK"]); zk.start(timeout=10)
zk.delete(os.environ["CHROOT"], recursive=True) if zk.exists(os.environ["CHROOT"]) else None
zk.stop(); zk.close()
EOF
    ) || echo "e2e: cleanup of $db / $prefix.* / $chroot failed; remove them by hand" >&2
}
trap cleanup EXIT

cd "$root"
"$py" -m dispatcher.store.migrate --host 127.0.0.1 --port "$mysql_port" --database "$db" >/dev/null
PREFIX="$prefix" KAFKA="$kafka" "$py" - <<'EOF'
import os, time
from confluent_kafka.admin import AdminClient, NewTopic
admin = AdminClient({"bootstrap.servers": os.environ["KAFKA"]})
names = [f"{os.environ['PREFIX']}.{p}" for p in ("high", "normal", "low")]
for f in admin.create_topics([NewTopic(t, num_partitions=4, replication_factor=1) for t in names],
                             operation_timeout=30).values():
    f.result(60)
for _ in range(300):  # creation is asynchronous: wait for partition leaders
    md = admin.list_topics(timeout=10).topics
    if all(t in md and all(p.leader >= 0 for p in md[t].partitions.values()) for t in names):
        break
    time.sleep(0.2)
EOF
TASKRING_MYSQL_PORT="$mysql_port" TASKRING_MYSQL_DATABASE="$db" TASKRING_KAFKA="$kafka" TASKRING_TOPIC_PREFIX="$prefix" \
TASKRING_ZK="$zk_hosts$chroot" TASKRING_PARTITIONS=4 TASKRING_GRPC_PORT="$grpc_port" TASKRING_ADMIN_PORT="$admin_port" \
TASKRING_ROUTE_THRESHOLD_MS=10000 TASKRING_NODE_ID="$run" \
    "$py" -m taskring_cli.main node --single --no-admin-token > "$log" 2>&1 &
node_pid=$!
for _ in $(seq 300); do
    grep -q " ready: grpc " "$log" && break
    kill -0 "$node_pid" 2>/dev/null || { echo "e2e: the node exited; log: $log" >&2; tail -20 "$log" >&2; exit 1; }
    sleep 0.2
done
grep -q " ready: grpc " "$log" || { echo "e2e: the node is not ready after 60 s; log: $log" >&2; exit 1; }

cd "$here"
TASKRING_IT_ZK="$zk_hosts" TASKRING_IT_NODES="127.0.0.1:$grpc_port" TASKRING_IT_DISPATCHER_ZK="$zk_hosts$chroot" \
    bash test.sh "$@"
