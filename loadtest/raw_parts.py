"""The raw limit of the parts underneath taskring, for a task-sized payload.

Before asking how fast taskring is, ask how fast the parts it stands on are on
the same machine, in the same run, for the same message size:

  Kafka    produce N messages (acks=all, idempotence, linger 5 ms, lz4: the
           dispatcher's producer settings) to a fresh 16-partition topic, one
           partition per slot, until every one is acked; then read them all back
           with a manually assigned consumer (the dispatcher's consumer settings).
  MariaDB  insert N due rows into `tasks` of a fresh scratch database (PyMySQL
           executemany, 1,000 rows per statement and transaction, 16 slots); then
           claim them all the way a slot owner does: per slot by equality on the
           (slot, status, trigger_at) index, 500 at a time, FOR UPDATE SKIP
           LOCKED + UPDATE to 'claimed', slots round-robin, from one connection.

Nothing of taskring runs here: no gRPC, no heap, no fencing read of
`slot_owners`. These are ceilings; a taskring figure above them is a
measurement error, and the gap below them is what taskring costs.

The benchmark topic and database are created for the run and dropped after it.

    .venv/bin/python -m loadtest.raw_parts                   # N=200,000, ~300-byte envelope
    .venv/bin/python -m loadtest.raw_parts --n 50000 --payload-bytes 1000 --only mysql

or `from loadtest.raw_parts import measure_raw_parts` (from the repository root).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import pathlib
import platform
import time
import uuid
from typing import Any

import pymysql
import pymysql.cursors
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from dispatcher.base.ids import new_task_id
from dispatcher.store.migrate import migrate
from harness.stack import StackEndpoints
from loadtest.bench import report
from loadtest.bench.env import add_stack_options
from loadtest.bench.observe import process_cpu_s
from taskring.wire import pb

SLOTS = 16
INSERT_BATCH = 1_000
CLAIM_LIMIT = 500

# Placeholders only: PyMySQL's executemany turns a batch into one multi-row INSERT
# only when VALUES (...) holds nothing but %s. A literal there ('pending', 0)
# silently makes it one statement per row, about 5x slower (checked below).
INSERT_SQL = """
    INSERT INTO tasks (task_id, slot, namespace, task_type, priority, status, trigger_at,
                       attempts, epoch, envelope, created_at, updated_at)
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
"""
assert pymysql.cursors.RE_INSERT_VALUES.match(INSERT_SQL), "executemany would not batch INSERT_SQL"

# The owner's claim (dispatcher/store/mysql.py claim_due) without the fencing read.
CLAIM_SELECT_SQL = """
    SELECT task_id, slot, namespace, task_type, priority, status, trigger_at, attempts, epoch,
           envelope, last_error, last_stack_trace, created_at, updated_at
      FROM tasks FORCE INDEX (idx_slot_lane_trigger)
     WHERE slot = %s AND lane = 1 AND trigger_at <= %s
     ORDER BY trigger_at, task_id
     LIMIT %s
       FOR UPDATE SKIP LOCKED
"""

CLAIM_UPDATE_SQL = """
    UPDATE tasks SET status = 'claimed', epoch = %s, updated_at = %s
     WHERE task_id IN ({marks})
"""


# ---------------------------------------------------------------- payloads

def make_envelopes(n: int, payload_bytes: int) -> list[tuple[str, bytes]]:
    """n (task_id, serialized pb.Task) pairs, each exactly `payload_bytes` long.

    A realistic envelope (ids, times, retry policy, a small JSON object) padded in
    its JSON payload to the requested size. Every task has its own ids, so Kafka's
    lz4 and InnoDB see data about as repetitive as a real batch of one task type.
    """
    now = dt.datetime.now(dt.UTC)
    stamp = now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"

    def envelope(task_id: str, i: int, pad: int) -> bytes:
        payload = json.dumps({"order_id": f"ord-{i:09d}", "user_id": 100_000 + i % 77_777,
                              "amount_cents": (i * 37) % 100_000, "pad": "x" * pad},
                             separators=(",", ":"))
        return pb.Task(
            task_id=task_id, namespace="bench", task_type="bench.noop", payload_json=payload,
            payload_version=1, schedule_time=stamp, timeout_ms=30_000, max_retries=3,
            retry_policy=pb.RetryPolicy(initial_backoff_ms=1_000, max_backoff_ms=60_000, multiplier=2.0),
            priority=pb.PRIORITY_NORMAL, trace_id=uuid.uuid4().hex, created_at=stamp,
        ).SerializeToString()

    probe_id = new_task_id()
    base = len(envelope(probe_id, 0, 0))
    if payload_bytes < base:
        raise ValueError(f"--payload-bytes must be >= {base} (an envelope with an empty pad)")
    out = []
    for i in range(n):
        task_id = new_task_id()
        pad = payload_bytes - base
        body = envelope(task_id, i, pad)
        # A varint length may grow by a byte when the pad crosses 127/16383: trim it back.
        while len(body) > payload_bytes and pad > 0:
            pad -= 1
            body = envelope(task_id, i, pad)
        out.append((task_id, body))
    return out


def _rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("inf")


# ---------------------------------------------------------------- Kafka

def measure_kafka(envelopes: list[tuple[str, bytes]], bootstrap: str, timeout_s: float = 90.0) -> dict[str, Any]:
    n = len(envelopes)
    topic = f"taskring.bench.raw.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 4})
    admin.create_topics([NewTopic(topic, num_partitions=SLOTS, replication_factor=1)])[topic].result(30)
    try:
        producer = Producer({
            # The dispatcher's producer (dispatcher/log/kafka.py TaskProducer).
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "batch.num.messages": 10_000,
            "queue.buffering.max.messages": 500_000,
            "message.timeout.ms": 15_000,
            "compression.type": "lz4",
        })
        _wait_for_leaders(producer, topic, timeout_s=30)

        acked, failed = [0], [0]

        def on_delivery(err, _msg):
            if err is None:
                acked[0] += 1
            else:
                failed[0] += 1

        cpu0 = time.process_time()
        t0 = time.perf_counter()
        for i, (_task_id, value) in enumerate(envelopes):
            while True:
                try:
                    producer.produce(topic, value, partition=i % SLOTS, on_delivery=on_delivery)
                    break
                except BufferError:          # local queue full: serve deliveries, then retry
                    producer.poll(0.05)
            if i % 1_000 == 0:
                producer.poll(0)
        left = producer.flush(timeout_s)
        produce_s = time.perf_counter() - t0
        produce_cpu_s = time.process_time() - cpu0
        if left or failed[0] or acked[0] != n:
            raise RuntimeError(f"kafka produce: {acked[0]} acked, {failed[0]} failed, {left} still queued of {n}")

        consumer = Consumer({
            # The dispatcher's consumer (dispatcher/log/kafka.py TaskConsumer).
            "bootstrap.servers": bootstrap,
            "group.id": f"taskring-bench-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 50,
            "enable.partition.eof": False,
        })
        try:
            consumed, consumed_bytes = 0, 0
            first_s: float | None = None
            cpu1 = time.process_time()
            t1 = time.perf_counter()
            consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(SLOTS)])
            deadline = t1 + timeout_s
            while consumed < n:
                if time.perf_counter() > deadline:
                    raise RuntimeError(f"kafka consume: {consumed} of {n} after {timeout_s}s")
                for msg in consumer.consume(10_000, 1.0):
                    if msg.error() is not None:
                        raise KafkaException(msg.error())
                    if first_s is None:
                        first_s = time.perf_counter() - t1
                    consumed += 1
                    payload = msg.value()
                    assert payload is not None, f"kafka consume: a message without a value at offset {msg.offset()}"
                    consumed_bytes += len(payload)
            consume_s = time.perf_counter() - t1
            consume_cpu_s = time.process_time() - cpu1
        finally:
            consumer.close()
    finally:
        admin.delete_topics([topic])[topic].result(30)

    assert first_s is not None, "kafka consume: no message was consumed (n < 1)"
    return {
        "topic": topic, "partitions": SLOTS, "messages": n,
        "produce_s": produce_s, "produce_per_s": _rate(n, produce_s),
        "produce_client_cpu_s": produce_cpu_s,
        "consume_s": consume_s, "consume_per_s": _rate(n, consume_s),
        "consume_after_first_per_s": _rate(n - 1, consume_s - first_s),
        "consume_client_cpu_s": consume_cpu_s,
        "consume_first_message_s": first_s, "consumed_bytes": consumed_bytes,
        "combined_s": produce_s + consume_s, "combined_per_s": _rate(n, produce_s + consume_s),
    }


def _wait_for_leaders(producer: Producer, topic: str, timeout_s: float) -> None:
    """Block on metadata requests until every partition of a new topic has a leader."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        meta = producer.list_topics(topic, timeout=5).topics.get(topic)
        if meta is not None and meta.error is None and len(meta.partitions) == SLOTS \
                and all(p.leader >= 0 for p in meta.partitions.values()):
            return
    raise RuntimeError(f"topic {topic}: partitions without a leader after {timeout_s}s")


# ---------------------------------------------------------------- MariaDB

def mysql_connect(host: str, port: int, user: str, database: str | None = None) -> pymysql.connections.Connection:
    """A connection set up like the task store's (dispatcher/store/mysql.py)."""
    return pymysql.connect(
        host=host, port=port, user=user, database=database, autocommit=False,
        init_command="SET SESSION tx_isolation = 'READ-COMMITTED', time_zone = '+00:00'",
    )


def server_pid(cur) -> int | None:
    """mariadbd's pid when it runs on this machine (its pid file is readable), else None."""
    try:
        cur.execute("SELECT @@pid_file")
        return int(pathlib.Path(cur.fetchone()[0]).read_text().split()[0])
    except (OSError, ValueError, TypeError, IndexError):
        return None


def _cpu_delta(before: float | None, after: float | None) -> float | None:
    return None if before is None or after is None else after - before


def create_scratch_db(host: str, port: int, user: str, prefix: str) -> str:
    database = f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    conn = mysql_connect(host, port, user)
    try:
        migrate(conn, database)
    finally:
        conn.close()
    return database


def drop_db(host: str, port: int, user: str, database: str) -> None:
    conn = pymysql.connect(host=host, port=port, user=user, autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{database}`")
    finally:
        conn.close()


def due_rows(envelopes: list[tuple[str, bytes]], slots: int = SLOTS) -> list[tuple]:
    """INSERT_SQL parameters: every row already due (trigger_at spread over the last
    minute, in insertion order), slot = i mod `slots`."""
    n = len(envelopes)
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)
    start = now - dt.timedelta(minutes=1)
    step_ms = 60_000 / max(n, 1)
    rows = []
    for i, (task_id, body) in enumerate(envelopes):
        trigger_at = start + dt.timedelta(milliseconds=int(i * step_ms))
        rows.append((task_id, i % slots, "bench", "bench.noop", 2, "pending", trigger_at, 0, 0, body, now, now))
    return rows


def insert_rows(conn: pymysql.connections.Connection, rows: list[tuple], batch: int = INSERT_BATCH) -> float:
    """Insert in executemany batches, one transaction each; returns seconds."""
    t0 = time.perf_counter()
    with conn.cursor() as cur:
        for i in range(0, len(rows), batch):
            cur.executemany(INSERT_SQL, rows[i:i + batch])
            conn.commit()
    return time.perf_counter() - t0


def claim_all_by_slot(conn: pymysql.connections.Connection, slots: list[int], limit: int = CLAIM_LIMIT,
                      epoch: int = 1) -> tuple[int, int]:
    """Claim every due row of `slots`, one slot at a time round-robin; (claimed, statements)."""
    until = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    live = list(slots)
    claimed = polls = 0
    with conn.cursor() as cur:
        while live:
            for slot in list(live):
                cur.execute(CLAIM_SELECT_SQL, (slot, until, limit))
                ids = [row[0] for row in cur.fetchall()]
                polls += 1
                if ids:
                    cur.execute(CLAIM_UPDATE_SQL.format(marks=",".join(["%s"] * len(ids))),
                                [epoch, until, *ids])
                    claimed += len(ids)
                else:
                    live.remove(slot)
                conn.commit()
    return claimed, polls


def measure_mysql(envelopes: list[tuple[str, bytes]], host: str, port: int, user: str) -> dict[str, Any]:
    n = len(envelopes)
    rows = due_rows(envelopes)
    database = create_scratch_db(host, port, user, "taskring_bench_raw")
    try:
        conn = mysql_connect(host, port, user, database)
        try:
            with conn.cursor() as cur:
                pid = server_pid(cur)
            conn.commit()
            srv0, cli0 = process_cpu_s(pid), time.process_time()
            insert_s = insert_rows(conn, rows)
            srv1, cli1 = process_cpu_s(pid), time.process_time()
            t0 = time.perf_counter()
            claimed, polls = claim_all_by_slot(conn, list(range(SLOTS)))
            claim_s = time.perf_counter() - t0
            srv2, cli2 = process_cpu_s(pid), time.process_time()
            with conn.cursor() as cur:
                cur.execute("SELECT status, COUNT(*) FROM tasks GROUP BY status")
                by_status = dict(cur.fetchall())
            conn.commit()
        finally:
            conn.close()
    finally:
        drop_db(host, port, user, database)
    if claimed != n or by_status != {"claimed": n}:
        raise RuntimeError(f"mysql claim: claimed {claimed} of {n}; rows by status {by_status}")
    return {
        "database": database, "rows": n, "slots": SLOTS,
        "insert_batch": INSERT_BATCH, "claim_limit": CLAIM_LIMIT, "claim_statements": polls,
        "insert_s": insert_s, "insert_per_s": _rate(n, insert_s),
        "insert_cpu_s": {"client": cli1 - cli0, "server": _cpu_delta(srv0, srv1)},
        "claim_s": claim_s, "claim_per_s": _rate(n, claim_s),
        "claim_cpu_s": {"client": cli2 - cli1, "server": _cpu_delta(srv1, srv2)},
        "combined_s": insert_s + claim_s, "combined_per_s": _rate(n, insert_s + claim_s),
    }


# ---------------------------------------------------------------- the whole

def measure_raw_parts(n: int = 200_000, payload_bytes: int = 300, *,
                      kafka_bootstrap: str = StackEndpoints().kafka_bootstrap,
                      mysql_host: str = StackEndpoints().host, mysql_port: int = StackEndpoints().mysql_port,
                      mysql_user: str = StackEndpoints().mysql_user,
                      parts: tuple[str, ...] = ("kafka", "mysql")) -> dict[str, Any]:
    """Measure the parts in sequence (never both at once); returns the figures as a dict."""
    envelopes = make_envelopes(n, payload_bytes)
    result: dict[str, Any] = {
        "n": n, "payload_bytes": payload_bytes,
        "envelope_bytes": len(envelopes[0][1]) if envelopes else 0,
        "machine": machine_facts(mysql_host, mysql_port, mysql_user) if "mysql" in parts else machine_facts(),
        "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    if "kafka" in parts:
        result["kafka"] = measure_kafka(envelopes, kafka_bootstrap)
    if "mysql" in parts:
        result["mysql"] = measure_mysql(envelopes, mysql_host, mysql_port, mysql_user)
    return result


def machine_facts(mysql_host: str | None = None, mysql_port: int = StackEndpoints().mysql_port,
                  mysql_user: str = StackEndpoints().mysql_user) -> dict[str, Any]:
    facts: dict[str, Any] = {"nproc": os.cpu_count(), "python": platform.python_version(),
                             "loadavg_1m": round(os.getloadavg()[0], 2)}
    try:
        import confluent_kafka
        version = confluent_kafka.version()
        facts["confluent_kafka"] = version if isinstance(version, str) else version[0]
        facts["librdkafka"] = confluent_kafka.libversion()[0]
    except Exception:  # pragma: no cover - facts are best effort
        pass
    if mysql_host:
        conn = pymysql.connect(host=mysql_host, port=mysql_port, user=mysql_user, autocommit=True)
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT VERSION(), @@innodb_buffer_pool_size, @@innodb_flush_log_at_trx_commit,"
                            " @@log_bin, @@innodb_lock_wait_timeout")
                row = cur.fetchone()
                assert row is not None, "SELECT VERSION(), ... returned no row"
                version, pool, flush, log_bin, wait = row
        finally:
            conn.close()
        facts.update({"mariadb": version, "innodb_buffer_pool_size": int(pool),
                      "innodb_flush_log_at_trx_commit": int(flush), "log_bin": bool(log_bin),
                      "innodb_lock_wait_timeout": int(wait)})
    return facts


def format_table(result: dict[str, Any]) -> str:
    lines = [f"N = {result['n']:,} messages/rows, envelope {result['envelope_bytes']} bytes",
             "",
             "| part | step | seconds | per second | CPU s client / server |",
             "| --- | --- | ---: | ---: | ---: |"]
    cpu = lambda c, s: f"{c:.1f} / {'?' if s is None else f'{s:.1f}'}"  # noqa: E731
    k = result.get("kafka")
    if k:
        lines += [f"| Kafka (16 partitions, acks=all, idempotent, lz4) | produce until all acked"
                  f" | {k['produce_s']:.2f} |"
                  f" {k['produce_per_s']:,.0f} msgs/s | {k['produce_client_cpu_s']:.1f} / - |",
                  f"| | consume all (assigned consumer; first message after {k['consume_first_message_s']:.2f} s,"
                  f" {k['consume_after_first_per_s']:,.0f} msgs/s from there) | {k['consume_s']:.2f} |"
                  f" {k['consume_per_s']:,.0f} msgs/s | {k['consume_client_cpu_s']:.1f} / - |",
                  f"| | produce + consume (N / total) | {k['combined_s']:.2f} | {k['combined_per_s']:,.0f} msgs/s | |"]
    m = result.get("mysql")
    if m:
        ic, cc = m["insert_cpu_s"], m["claim_cpu_s"]
        lines += [f"| MariaDB `tasks` (16 slots) | insert, executemany x {m['insert_batch']:,} | {m['insert_s']:.2f} |"
                  f" {m['insert_per_s']:,.0f} rows/s | {cpu(ic['client'], ic['server'])} |",
                  f"| | claim per slot, LIMIT {m['claim_limit']} SKIP LOCKED + UPDATE, 1 conn | {m['claim_s']:.2f} |"
                  f" {m['claim_per_s']:,.0f} rows/s | {cpu(cc['client'], cc['server'])} |",
                  f"| | insert + claim (N / total) | {m['combined_s']:.2f} | {m['combined_per_s']:,.0f} rows/s | |"]
    return "\n".join(lines)


def render_report(result: dict[str, Any], command: str) -> str:
    facts = result["machine"]
    return "\n".join([
        "# Raw parts: Kafka and MariaDB underneath taskring",
        "",
        f"Run {result['started_at']} with `{command}`.",
        "",
        format_table(result),
        "",
        "Machine: " + ", ".join(f"{k} {v}" for k, v in facts.items()) + ".",
        "",
        "Kafka is timed from the first produce() (producer connected, topic leaders known) to the"
        " last ack, and from assign() to the last message read; MariaDB per phase. CPU: this"
        " process (client, all its threads) and mariadbd (server, from /proc), per phase.",
        "",
        "What this is and how to read it: loadtest/README.md. Raw JSON: raw_parts.json.",
        "",
    ])


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=200_000, help="messages (Kafka) and rows (MariaDB); default 200,000")
    p.add_argument("--payload-bytes", type=int, default=300, help="serialized envelope size; default 300")
    p.add_argument("--only", choices=["kafka", "mysql"], help="measure one part only")
    add_stack_options(p)
    report.add_report_options(p, "raw_parts")
    args = p.parse_args(argv)
    parts = (args.only,) if args.only else ("kafka", "mysql")
    result = measure_raw_parts(args.n, args.payload_bytes, kafka_bootstrap=args.kafka,
                               mysql_host=args.mysql_host, mysql_port=args.mysql_port,
                               mysql_user=args.mysql_user, parts=parts)
    print(format_table(result))
    report.publish(args, result, report.command_line("loadtest.raw_parts", argv), render_report)


if __name__ == "__main__":
    main()
