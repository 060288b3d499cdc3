#!/usr/bin/env bash
# taskring's local stack: ZooKeeper, Kafka (KRaft) and MariaDB, on 127.0.0.1 only.
#
#   bash deploy/local/stack.sh up       install what is missing, start, wait until ready,
#                                       create database `taskring` and the taskring.tasks.* topics (or grow
#                                       them to TASKRING_PARTITIONS if an older `up` made them smaller)
#   bash deploy/local/stack.sh down     stop what `up` started (by PID), wait for exit
#   bash deploy/local/stack.sh status   each server: port, PID, health
#   bash deploy/local/stack.sh restart-zookeeper [DOWN_S]
#                                       stop ZooKeeper by its PID, stay down DOWN_S seconds (default 0),
#                                       start it again (same config, same data dir), wait until it answers;
#                                       prints how long it was down (for fault tests: keep that under the
#                                       clients' session timeout and their sessions survive)
#   bash deploy/local/stack.sh stop-zookeeper | start-zookeeper
#                                       the two halves of that, for a downtime you control
#
# Every command is idempotent. State and logs live in .stack/ at the repo root
# (TASKRING_STACK_DIR overrides). Ports: TASKRING_ZK_PORT (22181), TASKRING_KAFKA_PORT (29092),
# TASKRING_KAFKA_CONTROLLER_PORT (29093), TASKRING_MYSQL_PORT (23306). Topic partitions:
# TASKRING_PARTITIONS (64, the node's default slot count). Kafka's jars are cached in ~/.cache/taskring/kafka-<version>/libs
# (TASKRING_CACHE_DIR overrides ~/.cache/taskring). Readiness deadline: TASKRING_READY_TIMEOUT (120 s).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
STACK_DIR="${TASKRING_STACK_DIR:-$ROOT/.stack}"
LOGS="$STACK_DIR/logs"
# shellcheck source=endpoints.sh
source "$HERE/endpoints.sh"   # TASKRING_ZK_PORT, TASKRING_KAFKA_PORT, ..._CONTROLLER_PORT, TASKRING_MYSQL_PORT
export TASKRING_PARTITIONS="${TASKRING_PARTITIONS:-64}"
READY_TIMEOUT="${TASKRING_READY_TIMEOUT:-120}"
CACHE_ROOT="${TASKRING_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/taskring}"
KAFKA_POM="$HERE/kafka/pom.xml"
KAFKA_VERSION="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$KAFKA_POM" | head -1)"
KAFKA_LIBS="$CACHE_ROOT/kafka-$KAFKA_VERSION/libs"
PY="$ROOT/.venv/bin/python"
ZK_CLASSPATH="/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar"
MARIADBD=/usr/sbin/mariadbd
MARIADB_INSTALL_DB=/usr/bin/mariadb-install-db
if [[ -n "${JAVA_HOME:-}" && -x "${JAVA_HOME}/bin/java" ]]; then JAVA="$JAVA_HOME/bin/java"; else JAVA=java; fi

# mariadb2 is the task store's second shard (dispatcher/store/sharded.py): tests and benchmarks of a
# store split by slot use both; a one-shard cluster (the demo, most tests) uses mariadb alone.
SERVERS=(zookeeper kafka mariadb mariadb2)

say() { echo "stack: $*"; }
die() { echo "stack: ERROR: $*" >&2; exit 1; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

port_of() {
    case "$1" in
        zookeeper) echo "$TASKRING_ZK_PORT" ;;
        kafka) echo "$TASKRING_KAFKA_PORT" ;;
        mariadb) echo "$TASKRING_MYSQL_PORT" ;;
        mariadb2) echo "$TASKRING_MYSQL_SHARD2_PORT" ;;
    esac
}
pidfile_of() { echo "$STACK_DIR/$1.pid"; }
log_of() { echo "$LOGS/$1.log"; }
# A string that only the command line of *our* instance of the server contains (guards against PID reuse).
marker_of() {
    case "$1" in
        zookeeper) echo "$STACK_DIR/zookeeper/zoo.cfg" ;;
        kafka) echo "$STACK_DIR/kafka/server.properties" ;;
        mariadb) echo "$STACK_DIR/mariadb/my.cnf" ;;
        mariadb2) echo "$STACK_DIR/mariadb2/my.cnf" ;;
    esac
}

# Prints the PID if the server we started is alive, else nothing (exit 1).
running_pid() {
    local f pid state
    f="$(pidfile_of "$1")"
    [[ -f "$f" ]] || return 1
    pid="$(cat "$f")"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    [[ -r "/proc/$pid/cmdline" ]] || return 1
    state="$(awk '{ sub(/.*\) /, ""); print $1 }' "/proc/$pid/stat" 2>/dev/null || true)"
    [[ "$state" != Z && "$state" != X && -n "$state" ]] || return 1
    tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF -- "$(marker_of "$1")" || return 1
    echo "$pid"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

lock_stack() {
    mkdir -p "$STACK_DIR" "$LOGS"
    exec 9>"$STACK_DIR/.lock"
    flock -w 900 9 || die "another stack.sh holds $STACK_DIR/.lock"
}

# ---------------------------------------------------------------- install

POLICY_RC=/usr/sbin/policy-rc.d
POLICY_RC_OURS=0
cleanup_policy_rc() {
    if [[ "$POLICY_RC_OURS" == 1 ]]; then rm -f "$POLICY_RC"; POLICY_RC_OURS=0; fi
}
trap cleanup_policy_rc EXIT

apt_install() {
    local pkgs=("$@") p missing=0
    export DEBIAN_FRONTEND=noninteractive
    for p in "${pkgs[@]}"; do
        if ! apt-cache policy "$p" 2>/dev/null | grep -q 'Candidate: [^(]'; then missing=1; fi
    done
    if [[ "$missing" == 1 ]]; then
        say "apt-get update (a package was not in the lists)"
        apt-get -o DPkg::Lock::Timeout=600 update -qq
    fi
    # Keep Debian's postinst from starting a system MariaDB on 3306 (or anything else).
    if [[ ! -e "$POLICY_RC" ]]; then
        printf '#!/bin/sh\n# temporary, written by taskring deploy/local/stack.sh during apt-get install\nexit 101\n' > "$POLICY_RC"
        chmod 755 "$POLICY_RC"
        POLICY_RC_OURS=1
    fi
    say "apt-get install ${pkgs[*]}"
    apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${pkgs[@]}" > "$LOGS/apt.log" 2>&1 \
        || { tail -30 "$LOGS/apt.log" >&2; cleanup_policy_rc; die "apt-get install ${pkgs[*]} failed; log: $LOGS/apt.log"; }
    cleanup_policy_rc
}

ensure_debian_packages() {
    local pkgs=()
    [[ -f /usr/share/java/zookeeper.jar ]] || pkgs+=(zookeeper)
    [[ -f /usr/share/java/slf4j-simple.jar ]] || pkgs+=(libslf4j-java)
    [[ -x "$MARIADBD" && -x "$MARIADB_INSTALL_DB" ]] || pkgs+=(mariadb-server)
    command -v mariadb >/dev/null 2>&1 || pkgs+=(mariadb-client)
    if ((${#pkgs[@]})); then apt_install "${pkgs[@]}"; fi
}

kafka_jars_complete() {
    [[ -f "$KAFKA_LIBS/.complete" && "$(cat "$KAFKA_LIBS/.complete")" == "$(sha256sum "$KAFKA_POM" | cut -d' ' -f1)" ]]
}

# Resolves org.apache.kafka:kafka_2.13:$KAFKA_VERSION, its runtime dependencies and the logging
# binding from Maven Central into $KAFKA_LIBS, once per machine (per pom content).
ensure_kafka_jars() {
    mkdir -p "$CACHE_ROOT"
    exec 7>"$CACHE_ROOT/.kafka.lock"
    flock -w 900 7 || die "could not lock $CACHE_ROOT/.kafka.lock"
    if kafka_jars_complete; then exec 7>&-; return 0; fi
    command -v mvn >/dev/null || die "mvn not found: Maven is needed once to fetch Kafka's jars"
    local tmp="$KAFKA_LIBS.tmp.$$"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    say "resolving org.apache.kafka:kafka_2.13:$KAFKA_VERSION + runtime deps from Maven Central into $KAFKA_LIBS"
    if ! mvn -q -B -f "$KAFKA_POM" dependency:copy-dependencies -DoutputDirectory="$tmp" > "$LOGS/mvn.log" 2>&1; then
        cat "$LOGS/mvn.log" >&2
        rm -rf "$tmp"
        die "Maven could not resolve Kafka's jars (see above; log: $LOGS/mvn.log)"
    fi
    [[ -f "$tmp/kafka_2.13-$KAFKA_VERSION.jar" ]] || die "kafka_2.13-$KAFKA_VERSION.jar missing after mvn"
    rm -rf "$KAFKA_LIBS"
    mv "$tmp" "$KAFKA_LIBS"
    sha256sum "$KAFKA_POM" | cut -d' ' -f1 > "$KAFKA_LIBS/.complete"
    say "cached $(ls "$KAFKA_LIBS" | grep -c '\.jar$') jars in $KAFKA_LIBS"
    exec 7>&-
}

install_all() {
    local mvn_pid="" rc=0
    if ! kafka_jars_complete; then
        # Maven runs while apt-get does; its messages go to $LOGS/mvn-run.log.
        ( ensure_kafka_jars ) > "$LOGS/mvn-run.log" 2>&1 &
        mvn_pid=$!
    fi
    ensure_debian_packages
    if [[ -n "$mvn_pid" ]]; then
        wait "$mvn_pid" || rc=$?
        cat "$LOGS/mvn-run.log"
        ((rc == 0)) || die "fetching Kafka's jars failed"
    fi
}

# ---------------------------------------------------------------- start

# A server of ours that has just exited (a restart, a fault test's kill) may hold its port for a
# moment while the kernel tears its sockets down: allow it a few seconds before calling the port
# taken, since a restart that dies here leaves the server down for every test after it.
check_port_free() {
    local name="$1" port="$2" var="$3" deadline=$(( $(date +%s) + 10 ))
    while port_open "$port"; do
        if (( $(date +%s) > deadline )); then
            die "$name: port $port on 127.0.0.1 is taken by a process this stack did not start; stop it or set $var"
        fi
        sleep 0.1
    done
}

# The last lines of a server's log, for an error that says it did not start.
log_tail() { echo "--- last 30 lines of $(log_of "$1"):" >&2; tail -n 30 "$(log_of "$1")" >&2 || true; }

# spawn NAME CMD...: run a server in a session of its own (setsid), logging to its log and
# writing its PID to its pidfile. Its own session, because whoever ran this script may be a
# test or a tool whose whole process group is signalled when it ends (or times out): a
# server started by `restart-zookeeper` from inside a test must outlive that test. The
# child writes its own PID before exec, so the pidfile is right whether or not setsid forks.
spawn() {
    local name="$1" pidfile
    shift
    pidfile="$(pidfile_of "$name")"
    rm -f "$pidfile"
    setsid bash -c 'echo $$ > "$0"; exec "$@"' "$pidfile" "$@" >> "$(log_of "$name")" 2>&1 < /dev/null 9>&- &
    local deadline=$(( $(date +%s) + 10 ))
    until [[ -s "$pidfile" ]]; do
        (( $(date +%s) <= deadline )) || die "$name: no pid written within 10s"
        sleep 0.01
    done
}

start_zookeeper() {
    local d="$STACK_DIR/zookeeper"
    mkdir -p "$d/data"
    cat > "$d/zoo.cfg" <<EOF
# written by deploy/local/stack.sh
tickTime=500
initLimit=10
syncLimit=5
dataDir=$d/data
clientPort=$TASKRING_ZK_PORT
clientPortAddress=127.0.0.1
minSessionTimeout=1000
maxSessionTimeout=60000
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat,mntr,cons,envi,conf
autopurge.snapRetainCount=3
autopurge.purgeInterval=1
EOF
    check_port_free zookeeper "$TASKRING_ZK_PORT" TASKRING_ZK_PORT
    echo "=== $(date -Is) start" >> "$(log_of zookeeper)"
    spawn zookeeper "$JAVA" -Xms32m -Xmx256m -XX:+UseSerialGC -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true \
        -cp "$ZK_CLASSPATH" org.apache.zookeeper.server.ZooKeeperServerMain "$d/zoo.cfg"
}

start_kafka() {
    local d="$STACK_DIR/kafka"
    mkdir -p "$d/data"
    cat > "$d/server.properties" <<EOF
# written by deploy/local/stack.sh: one combined broker+controller in KRaft mode
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$TASKRING_KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$TASKRING_KAFKA_PORT,CONTROLLER://127.0.0.1:$TASKRING_KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$TASKRING_KAFKA_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$d/data
num.network.threads=2
num.io.threads=4
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
auto.create.topics.enable=false
delete.topic.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=8
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
log.retention.hours=24
log.segment.bytes=134217728
EOF
    if [[ ! -f "$d/data/meta.properties" ]]; then
        # `--cluster-id=ID`, not `-t ID`: a random id may begin with "-" (1 in 32), which the
        # tool's argument parser then takes for an option and refuses.
        [[ -s "$d/cluster.id" ]] || "$PY" -c 'import base64, uuid; print(base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("="))' > "$d/cluster.id"
        say "kafka: formatting $d/data with cluster id $(cat "$d/cluster.id")"
        "$JAVA" -Xmx256m -Dlog4j2.configurationFile="$HERE/kafka/log4j2.properties" -cp "$KAFKA_LIBS/*" \
            kafka.tools.StorageTool format --cluster-id="$(cat "$d/cluster.id")" -c "$d/server.properties" \
            >> "$(log_of kafka)" 2>&1 || die "kafka: storage format failed; log: $(log_of kafka)"
    fi
    check_port_free kafka "$TASKRING_KAFKA_PORT" TASKRING_KAFKA_PORT
    check_port_free kafka-controller "$TASKRING_KAFKA_CONTROLLER_PORT" TASKRING_KAFKA_CONTROLLER_PORT
    echo "=== $(date -Is) start" >> "$(log_of kafka)"
    spawn kafka "$JAVA" -Xms256m -Xmx512m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExitOnOutOfMemoryError \
        -Djava.awt.headless=true -Dlog4j2.configurationFile="$HERE/kafka/log4j2.properties" \
        -Dkafka.logs.dir="$LOGS" -cp "$KAFKA_LIBS/*" kafka.Kafka "$d/server.properties"
}

start_mariadb() { start_mariadb_server mariadb "$TASKRING_MYSQL_PORT" TASKRING_MYSQL_PORT; }
start_mariadb2() { start_mariadb_server mariadb2 "$TASKRING_MYSQL_SHARD2_PORT" TASKRING_MYSQL_SHARD2_PORT; }

# start_mariadb_server NAME PORT PORT_VARIABLE: one MariaDB server with its own data dir.
start_mariadb_server() {
    local name="$1" port="$2" port_var="$3" d="$STACK_DIR/$1" user_line=""
    mkdir -p "$d/data"
    [[ "$(id -u)" == 0 ]] && user_line="user=root"
    # Run by mariadbd at every start (init-file): root over TCP from 127.0.0.1, no password (local only).
    cat > "$d/init.sql" <<'EOF'
CREATE USER IF NOT EXISTS 'root'@'127.0.0.1';
GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
EOF
    cat > "$d/my.cnf" <<EOF
# written by deploy/local/stack.sh
[mysqld]
$user_line
datadir=$d/data
socket=$d/mariadbd.sock
pid-file=$d/mariadbd.pid
port=$port
bind-address=127.0.0.1
skip-name-resolve
log-error=$(log_of "$name")
init-file=$d/init.sql
character-set-server=utf8mb4
collation-server=utf8mb4_general_ci
default-time-zone=+00:00
max_connections=1000
innodb_buffer_pool_size=256M
innodb_log_file_size=256M
performance_schema=OFF
skip-log-bin

[client]
port=$port
socket=$d/mariadbd.sock
user=root
EOF
    if [[ ! -d "$d/data/mysql" ]]; then
        say "$name: initialising $d/data"
        "$MARIADB_INSTALL_DB" --defaults-file="$d/my.cnf" --auth-root-authentication-method=normal --skip-test-db \
            >> "$(log_of "$name")" 2>&1 || die "$name: mariadb-install-db failed; log: $(log_of "$name")"
    fi
    check_port_free "$name" "$port" "$port_var"
    echo "=== $(date -Is) start" >> "$(log_of "$name")"
    spawn "$name" "$MARIADBD" --defaults-file="$d/my.cnf"
}

cmd_up() {
    local t0 t1 t2 t3 name pid
    t0="$(now)"
    lock_stack
    # test.sh and demo.sh have just run it; stack.sh alone runs it itself (it needs .venv).
    [[ "${TASKRING_BOOTSTRAP_DONE:-}" == 1 ]] || bash "$HERE/bootstrap.sh"
    t1="$(now)"
    install_all
    t2="$(now)"
    say "install: $(secs "$t0" "$t2")s (python venv $(secs "$t0" "$t1")s, servers $(secs "$t1" "$t2")s)"
    say "kafka: org.apache.kafka:kafka_2.13:$KAFKA_VERSION from $KAFKA_LIBS"

    for name in "${SERVERS[@]}"; do
        if pid="$(running_pid "$name")"; then
            say "$name already running (pid $pid)"
        else
            "start_$name"
            say "$name started (pid $(cat "$(pidfile_of "$name")"), log $(log_of "$name"))"
        fi
    done
    STACK_ZOOKEEPER_PID="$(pidfile_of zookeeper)" STACK_KAFKA_PID="$(pidfile_of kafka)" STACK_MARIADB_PID="$(pidfile_of mariadb)" STACK_MARIADB2_PID="$(pidfile_of mariadb2)" \
    STACK_ZOOKEEPER_LOG="$(log_of zookeeper)" STACK_KAFKA_LOG="$(log_of kafka)" STACK_MARIADB_LOG="$(log_of mariadb)" STACK_MARIADB2_LOG="$(log_of mariadb2)" \
        "$PY" "$HERE/stackctl.py" wait --timeout "$READY_TIMEOUT" || die "the stack did not become ready (see above)"
    t3="$(now)"
    (cd "$ROOT" && "$PY" -m dispatcher.store.migrate --host 127.0.0.1 --port "$TASKRING_MYSQL_PORT" --database taskring) \
        | sed 's/^/stack: mariadb: /' || die "mariadb: migrations failed"
    (cd "$ROOT" && "$PY" -m dispatcher.store.migrate --host 127.0.0.1 --port "$TASKRING_MYSQL_SHARD2_PORT" --database taskring) \
        | sed 's/^/stack: mariadb2: /' || die "mariadb2: migrations failed"
    # Creates the topics, or grows ones an older `up` made with fewer partitions than the nodes have slots.
    "$PY" "$HERE/stackctl.py" topics --partitions "$TASKRING_PARTITIONS" || die "kafka: creating or growing topics failed; log: $(log_of kafka)"
    say "start to all ready: $(secs "$t2" "$t3")s; setup (database, topics): $(secs "$t3" "$(now)")s; total: $(secs "$t0" "$(now)")s"
    echo "$(date -Is) up install=$(secs "$t0" "$t2")s ready=$(secs "$t2" "$t3")s total=$(secs "$t0" "$(now)")s" >> "$STACK_DIR/timings.log"
    say "up: ZooKeeper 127.0.0.1:$TASKRING_ZK_PORT, Kafka 127.0.0.1:$TASKRING_KAFKA_PORT, MariaDB 127.0.0.1:$TASKRING_MYSQL_PORT and 127.0.0.1:$TASKRING_MYSQL_SHARD2_PORT (database taskring); logs in $LOGS"
}

# Demo nodes left running by `TASKRING_DEMO_KEEP=1 taskring demo` need the stack: stop them first.
stop_demo_nodes() {
    local f="$STACK_DIR/demo-nodes.pids" pid pids=() deadline
    [[ -f "$f" ]] || return 0
    for pid in $(cat "$f"); do
        [[ "$pid" =~ ^[0-9]+$ && -r "/proc/$pid/cmdline" ]] || continue
        tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF -- "taskring_cli.main node --node-id demo-node-" || continue
        pids+=("$pid")
    done
    if ((${#pids[@]})); then
        say "stopping the demo's dispatcher nodes (pids ${pids[*]})"
        kill -TERM "${pids[@]}" 2>/dev/null || true
        deadline=$(( $(date +%s) + 30 ))
        for pid in "${pids[@]}"; do
            while kill -0 "$pid" 2>/dev/null && [[ "$(awk '{ sub(/.*\) /, ""); print $1 }' "/proc/$pid/stat" 2>/dev/null)" != Z ]]; do
                if (( $(date +%s) > deadline )); then
                    say "demo node (pid $pid) did not exit within 30s of SIGTERM: SIGKILL"
                    kill -KILL "$pid" 2>/dev/null || true
                    break
                fi
                sleep 0.2
            done
        done
    fi
    rm -f "$f"
}

cmd_down() {
    local name pid pids=() names=() i deadline
    lock_stack
    stop_demo_nodes
    for name in kafka zookeeper mariadb mariadb2; do
        if pid="$(running_pid "$name")"; then
            say "stopping $name (pid $pid)"
            kill -TERM "$pid" 2>/dev/null || true
            pids+=("$pid"); names+=("$name")
        else
            say "$name not running"
            rm -f "$(pidfile_of "$name")"
        fi
    done
    deadline=$(( $(date +%s) + 60 ))
    for i in "${!pids[@]}"; do
        while running_pid "${names[$i]}" >/dev/null; do
            if (( $(date +%s) > deadline )); then
                say "${names[$i]} (pid ${pids[$i]}) did not exit within 60s of SIGTERM: SIGKILL"
                kill -KILL "${pids[$i]}" 2>/dev/null || true
                sleep 0.5
                break
            fi
            sleep 0.2
        done
        rm -f "$(pidfile_of "${names[$i]}")"
        say "${names[$i]} stopped"
    done
    echo "$(date -Is) down" >> "$STACK_DIR/timings.log"
}

# ---------------------------------------------------------------- ZooKeeper alone (fault tests)

ZK_STOPPED_AT="$STACK_DIR/zookeeper/stopped_at"

# SIGTERM the ZooKeeper we started, wait for it to exit (SIGKILL after 30 s). Returns 1 if it was not running.
stop_zookeeper_now() {
    local pid deadline
    pid="$(running_pid zookeeper)" || return 1
    kill -TERM "$pid" 2>/dev/null || true
    deadline=$(( $(date +%s) + 30 ))
    while running_pid zookeeper >/dev/null; do
        if (( $(date +%s) > deadline )); then
            say "zookeeper (pid $pid) did not exit within 30s of SIGTERM: SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
            sleep 0.2
            break
        fi
        sleep 0.02
    done
    rm -f "$(pidfile_of zookeeper)"
}

# Start ZooKeeper with the same config and data dir as `up`, and wait until it answers `srvr`.
start_zookeeper_now() {
    [[ -f /usr/share/java/zookeeper.jar && -d "$STACK_DIR/zookeeper/data" ]] \
        || die "zookeeper was never set up in $STACK_DIR: run \`bash deploy/local/stack.sh up\` first"
    [[ -x "$PY" ]] || die "no .venv: run deploy/local/bootstrap.sh"
    start_zookeeper
    STACK_ZOOKEEPER_PID="$(pidfile_of zookeeper)" STACK_ZOOKEEPER_LOG="$(log_of zookeeper)" \
        "$PY" "$HERE/stackctl.py" wait --servers zookeeper --timeout "$READY_TIMEOUT" \
        || { log_tail zookeeper; die "zookeeper did not become ready (see above)"; }
}

cmd_stop_zookeeper() {
    local t0 pid
    lock_stack
    if ! pid="$(running_pid zookeeper)"; then
        say "zookeeper not running"
        return 0
    fi
    t0="$(now)"
    stop_zookeeper_now
    date +%s.%N > "$ZK_STOPPED_AT"
    say "zookeeper stopped (pid $pid) in $(secs "$t0" "$(now)")s; start it with: bash deploy/local/stack.sh start-zookeeper"
    echo "$(date -Is) stop-zookeeper" >> "$STACK_DIR/timings.log"
}

cmd_start_zookeeper() {
    local t0 pid down=""
    lock_stack
    if pid="$(running_pid zookeeper)"; then
        say "zookeeper already running (pid $pid)"
        return 0
    fi
    t0="$(now)"
    start_zookeeper_now
    if [[ -s "$ZK_STOPPED_AT" ]]; then down="; it was down for $(secs "$(cat "$ZK_STOPPED_AT")" "$(now)")s"; fi
    rm -f "$ZK_STOPPED_AT"
    say "zookeeper started (pid $(cat "$(pidfile_of zookeeper)")), answering after $(secs "$t0" "$(now)")s$down"
    echo "$(date -Is) start-zookeeper${down:+ down=${down##* }}" >> "$STACK_DIR/timings.log"
}

cmd_restart_zookeeper() {
    local hold="${1:-0}" t0 t1 t2 t3 old new
    [[ "$hold" =~ ^[0-9]+([.][0-9]+)?$ ]] || die "restart-zookeeper: DOWN_S must be a number of seconds, got '$hold'"
    lock_stack
    old="$(running_pid zookeeper)" || die "zookeeper is not running (bash deploy/local/stack.sh up)"
    t0="$(now)"
    stop_zookeeper_now
    t1="$(now)"
    if [[ "$hold" != 0 ]]; then sleep "$hold"; fi
    t2="$(now)"
    start_zookeeper_now
    t3="$(now)"
    rm -f "$ZK_STOPPED_AT"
    new="$(cat "$(pidfile_of zookeeper)")"
    say "zookeeper restarted (pid $old -> $new): stop $(secs "$t0" "$t1")s, held down $(secs "$t1" "$t2")s, start to answering $(secs "$t2" "$t3")s"
    say "zookeeper was down for $(secs "$t0" "$t3")s (SIGTERM to answering again)"
    echo "$(date -Is) restart-zookeeper down=$(secs "$t0" "$t3")s" >> "$STACK_DIR/timings.log"
}

# ---------------------------------------------------------------- any one server (fault tests)

valid_server() {
    local name
    for name in "${SERVERS[@]}"; do [[ "$1" == "$name" ]] && return 0; done
    die "unknown server '$1' (one of: ${SERVERS[*]})"
}

# kill -9 one server we started (a crash: no clean shutdown), and wait until it is gone.
cmd_kill() {
    local name="$1" pid deadline
    valid_server "$name"
    lock_stack
    if ! pid="$(running_pid "$name")"; then
        say "$name not running"
        return 0
    fi
    kill -KILL "$pid" 2>/dev/null || true
    deadline=$(( $(date +%s) + 30 ))
    while running_pid "$name" >/dev/null; do
        (( $(date +%s) <= deadline )) || die "$name (pid $pid) still there 30s after SIGKILL"
        sleep 0.02
    done
    rm -f "$(pidfile_of "$name")"
    say "$name killed (pid $pid)"
    echo "$(date -Is) kill $name" >> "$STACK_DIR/timings.log"
}

# Start one server with the same config and data as `up`, and wait until it answers.
cmd_start() {
    local name="$1" t0 pid
    valid_server "$name"
    lock_stack
    if pid="$(running_pid "$name")"; then
        say "$name already running (pid $pid)"
        return 0
    fi
    [[ -x "$PY" ]] || die "no .venv: run deploy/local/bootstrap.sh"
    t0="$(now)"
    "start_$name"
    STACK_ZOOKEEPER_PID="$(pidfile_of zookeeper)" STACK_KAFKA_PID="$(pidfile_of kafka)" STACK_MARIADB_PID="$(pidfile_of mariadb)" STACK_MARIADB2_PID="$(pidfile_of mariadb2)" \
    STACK_ZOOKEEPER_LOG="$(log_of zookeeper)" STACK_KAFKA_LOG="$(log_of kafka)" STACK_MARIADB_LOG="$(log_of mariadb)" STACK_MARIADB2_LOG="$(log_of mariadb2)" \
        "$PY" "$HERE/stackctl.py" wait --servers "$name" --timeout "$READY_TIMEOUT" || { log_tail "$name"; die "$name did not become ready (see above)"; }
    say "$name started (pid $(cat "$(pidfile_of "$name")")), answering after $(secs "$t0" "$(now)")s"
    echo "$(date -Is) start $name" >> "$STACK_DIR/timings.log"
}

cmd_status() {
    local name pid health="" rc=0 line
    mkdir -p "$STACK_DIR"
    if [[ -x "$PY" ]]; then health="$("$PY" "$HERE/stackctl.py" health 2>/dev/null || true)"; fi
    printf '%-10s %-6s %-8s %s\n' SERVER PORT PID HEALTH
    for name in "${SERVERS[@]}"; do
        pid="$(running_pid "$name" || echo -)"
        line="$(grep "^$name " <<< "$health" | cut -d' ' -f2- || true)"
        [[ -n "$line" ]] || line="unknown (no .venv: run deploy/local/bootstrap.sh)"
        [[ "$pid" == - && "$line" == ok* ]] && line="$line (not started by this stack)"
        [[ "$line" == ok* ]] || rc=1
        printf '%-10s %-6s %-8s %s\n' "$name" "$(port_of "$name")" "$pid" "$line"
    done
    echo "state and logs: $STACK_DIR"
    return $rc
}

case "${1:-}" in
    up) cmd_up ;;
    down) cmd_down ;;
    status) cmd_status ;;
    restart-zookeeper) cmd_restart_zookeeper "${2:-0}" ;;
    stop-zookeeper) cmd_stop_zookeeper ;;
    start-zookeeper) cmd_start_zookeeper ;;
    kill) [[ -n "${2:-}" ]] || die "usage: $0 kill zookeeper|kafka|mariadb|mariadb2"; cmd_kill "$2" ;;
    start) [[ -n "${2:-}" ]] || die "usage: $0 start zookeeper|kafka|mariadb|mariadb2"; cmd_start "$2" ;;
    *) echo "usage: $0 up|down|status|restart-zookeeper [DOWN_S]|stop-zookeeper|start-zookeeper|kill SERVER|start SERVER" >&2
       exit 2 ;;
esac
