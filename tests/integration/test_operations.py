"""Operations on a real node: dead letters grouped, shown, edited (with a diff first),
replayed with their history kept, deleted, bulk-replayed at a rate through a kill -9 of the
node running the job; the audit trail of each action; and task search, every statement of
which EXPLAIN shows reading an index."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid

import pymysql
import pytest

from dispatcher.store import records as r
from harness.processes import NodeProcess
from harness.wait import wait_until
from taskring import Client, TaskSpec, TaskState
from tests.integration.payments import NS, charge, dead_letter

pytestmark = pytest.mark.integration

@pytest.fixture
def node(taskring_env):
    n = NodeProcess(taskring_env, "ops-1", single=True).start()
    try:
        n.wait_ready()
        yield n
    finally:
        n.terminate()


def call(node: NodeProcess, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(node.admin + path, data=data, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def ok(node: NodeProcess, method: str, path: str, body: dict | None = None) -> dict:
    status, answer = call(node, method, path, body)
    assert status in (200, 201), (status, answer)
    return answer


def history_of(client: Client, task_id: str) -> list:
    return list(client.get(task_id).history)


def test_dead_letters_grouped_shown_edited_replayed_and_deleted(node, payments, taskring_env):
    with Client(node.target) as client:
        charges = dead_letter(client, [charge(1000 + i) for i in range(6)]
                              + [TaskSpec(NS, "ship", {"zone": z}) for z in (7, 9)])
        ships = charges[6:]
        charges = charges[:6]

        # Eight dead letters from two failures read as two lines.
        groups = ok(node, "GET", f"/api/dead-letters/groups?namespace={NS}")
        assert groups["total"] == 8
        lines = {(g["task_type"], g["error_class"], g["error_shape"]): g["count"] for g in groups["groups"]}
        assert lines == {("charge", "ValueError", "card declined for order <n>"): 6,
                         ("ship", "NonRetryableError", "no carrier for zone <n>"): 2}, lines
        group = next(g for g in groups["groups"] if g["task_type"] == "charge")["error_group"]

        # Paged newest first, by the group, with a cursor; no page repeats a row.
        first = ok(node, "GET", f"/api/dead-letters?error_group={group}&limit=4")
        second = ok(node, "GET", f"/api/dead-letters?error_group={group}&limit=4&before={first['next']}")
        seen = [d["task_id"] for d in first["items"] + second["items"]]
        assert sorted(seen) == sorted(charges) and second["next"] is None
        assert call(node, "GET", "/api/dead-letters?since=yesterday")[0] == 400

        # One dead letter whole: its envelope, every attempt with error and stack trace.
        shown = ok(node, "GET", f"/api/dead-letters/{charges[0]}")
        assert shown["envelope"]["payload"] == {"order": 1000, "card": "bad"}
        [attempt] = shown["attempts"]
        assert attempt["outcome"] == "failed" and "card declined for order 1000" in attempt["error"]
        assert "ValueError" in attempt["stack_trace"] and "Traceback" in attempt["stack_trace"]

        # Edit: the diff first, nothing written; a bad payload named as on submit.
        target = charges[0]
        status, bad = call(node, "POST", f"/api/dead-letters/{target}/edit",
                           {"reason": "fix card", "payload_json": "[1]"})
        assert status == 400 and bad["error"].startswith("edit.payload_json"), bad
        status, bad = call(node, "POST", f"/api/dead-letters/{target}/edit", {"payload_json": "{}"})
        assert status == 400 and bad["error"].startswith("reason"), bad
        preview = ok(node, "POST", f"/api/dead-letters/{target}/edit",
                     {"reason": "customer updated the card", "payload_json": '{"order": 1000, "card": "good"}',
                      "payload_version": 2})
        assert preview["confirmed"] is False
        assert '-  "card": "bad",' in preview["diff"] and '+  "card": "good",' in preview["diff"], preview["diff"]
        assert client.get(target).state == TaskState.DEAD_LETTERED
        status, stale = call(node, "POST", f"/api/dead-letters/{target}/edit",
                             {"reason": "x", "payload_json": '{"order": 1000, "card": "good"}',
                              "confirm": "0000000000000000"})
        assert status == 409 and "changed since" in stale["error"]
        ok(node, "POST", f"/api/dead-letters/{target}/edit",
           {"reason": "customer updated the card", "payload_json": '{"order": 1000, "card": "good"}',
            "payload_version": 2, "confirm": preview["digest"]})
        wait_until(lambda: client.get(target).state == TaskState.SUCCEEDED, 30, "the edited task to succeed")
        task = client.get(target)
        assert task.payload == {"order": 1000, "card": "good"}
        history = task.history
        assert r.history_errors([str(e.state) for e in history]) == []
        replay_event = next(e for e in history if e.state == TaskState.RETRY_WAIT)
        assert "payload edited and replayed by anonymous" in replay_event.detail
        assert "customer updated the card" in replay_event.detail
        states = [str(e.state) for e in history]
        at = states.index("dead_lettered")
        assert states[at:at + 4] == ["dead_lettered", "retry_wait", "queued", "dispatched"], states
        assert states[-1] == "succeeded"
        assert payments.runs[target] == 2

        # A plain replay runs once more (retries 0) and dead-letters again: attempt 2.
        again = charges[1]
        ok(node, "POST", f"/api/dead-letters/{again}/replay", {"reason": "try once more"})
        wait_until(lambda: client.get(again).state == TaskState.DEAD_LETTERED and client.get(again).attempts == 2,
                   30, "the replayed task to fail again")
        assert r.history_errors([str(e.state) for e in history_of(client, again)]) == []
        assert len(ok(node, "GET", f"/api/dead-letters/{again}")["attempts"]) == 2
        # With a retry budget it gets that many more retries.
        ok(node, "POST", f"/api/dead-letters/{again}/replay", {"reason": "two more", "retries": 2})
        wait_until(lambda: client.get(again).state == TaskState.DEAD_LETTERED and client.get(again).attempts == 5,
                   60, "three more attempts")

        # Delete: gone from the dead letters, still dead-lettered, not replayable.
        ok(node, "POST", f"/api/dead-letters/{ships[0]}/delete", {"reason": "zone closed"})
        assert call(node, "GET", f"/api/dead-letters/{ships[0]}")[0] == 404
        assert client.get(ships[0]).state == TaskState.DEAD_LETTERED
        status, answer = call(node, "POST", f"/api/dead-letters/{ships[0]}/replay", {"reason": "oops"})
        assert status == 409 and "not a dead letter" in answer["error"]
        assert call(node, "POST", "/api/dead-letters/no-such-task/replay", {"reason": "x"})[0] == 404

        # The groups' counts, kept in each change's transaction, agree with the dead letters
        # themselves (a time range reads those): one charge succeeded, one ship was deleted.
        def lines_of(query: str) -> dict:
            return {(g["task_type"], g["error_group"]): g["count"]
                    for g in ok(node, "GET", f"/api/dead-letters/groups?namespace={NS}{query}")["groups"]}
        counted = lines_of("")
        assert sorted(counted.values()) == [1, 5], counted
        assert lines_of("&since=2000-01-01T00:00:00Z") == counted

        # The audit trail: who, when, from where, what, before and after; unchangeable.
        records = ok(node, "GET", f"/api/audit?namespace={NS}")["records"]
        actions = [rec["action"] for rec in records]
        assert actions[:4] == ["dlq.delete", "dlq.replay", "dlq.replay", "dlq.edit"], actions
        edit = records[3]
        assert edit["actor"] == "anonymous" and edit["address"] == "127.0.0.1"
        assert edit["target"] == f"task:{target}" and edit["reason"] == "customer updated the card"
        assert json.loads(edit["before"]["payload_json"]) == {"order": 1000, "card": "bad"}
        assert json.loads(edit["after"]["payload_json"]) == {"order": 1000, "card": "good"}
        assert edit["after"]["payload_version"] == 2
        assert ok(node, "GET", f"/api/tasks/{target}")["audit"][0]["action"] == "dlq.edit"
        for statement in ("UPDATE audit_log SET actor = 'mallory'", "DELETE FROM audit_log"):
            with pytest.raises(pymysql.err.OperationalError, match="cannot be"):
                taskring_env.sql(statement)

        # The overview's figures, from the per-minute aggregates the node writes in batches.
        def figures():
            types = {(t["namespace"], t["task_type"]): t for t in ok(node, "GET", "/api/stats")["day"]["types"]}
            c, sh = types.get((NS, "charge")), types.get((NS, "ship"))
            if c and sh and c["dead_lettered"] >= 8 and c["succeeded"] >= 1 and sh["dead_lettered"] == 2:
                return c, sh
            return None
        c, sh = wait_until(figures, 30, "the figures of both types")
        assert (c["submitted"], sh["submitted"]) == (6, 2)
        assert c["success_rate"] == pytest.approx(1 / 9, abs=0.01) and c["duration_p50_ms"] is not None
        series = ok(node, "GET", "/api/stats?hours=1")["series"]
        assert sum(m["submitted"] for m in series) >= 8


def test_bulk_replay_at_a_rate_with_pause_and_a_kill_of_its_node(node, payments, taskring_env):
    with Client(node.target) as client:
        ids = dead_letter(client, [charge(2000 + i) for i in range(20)])
        payments.fixed.set()   # the outage is over
        status, bad = call(node, "POST", "/api/bulk-replays", {"reason": "x", "rate_per_s": 0,
                                                               "filter": {"task_type": "charge"}})
        assert status == 400 and bad["error"].startswith("rate_per_s")
        status, bad = call(node, "POST", "/api/bulk-replays", {"reason": "x", "filter": {"colour": "red"}})
        assert status == 400 and bad["error"].startswith("filter.colour")
        job = ok(node, "POST", "/api/bulk-replays", {"reason": "card processor is back", "rate_per_s": 3,
                                                    "filter": {"namespace": NS, "task_type": "charge"}})
        assert job["total"] == 20 and job["state"] == "running"
        path = f"/api/bulk-replays/{job['id']}"
        wait_until(lambda: ok(node, "GET", path)["replayed"] >= 3, 30, "the job to start")
        paused = ok(node, "POST", f"{path}/pause", {"reason": "watch the first ones"})
        assert paused["state"] == "paused"
        assert call(node, "POST", f"{path}/pause", {"reason": "again"})[0] == 409
        ok(node, "POST", f"{path}/resume", {"reason": "they succeeded"})
        wait_until(lambda: ok(node, "GET", path)["replayed"] >= 8, 30, "progress after resume")

        # kill -9 the node running it; a new node goes on from the stored cursor. A replayed
        # task the node was running may run once more (its outcome died with the node): only
        # one not yet succeeded when the kill came.
        finished = {i for i in ids if client_state(node, i) == "succeeded"}
        node.kill()
        restarted = NodeProcess(taskring_env, "ops-2", single=True).start()
        try:
            restarted.wait_ready()
            done = wait_until(lambda: (lambda j: j if j["state"] == "done" else None)(ok(restarted, "GET", path)),
                              60, "the job to finish")
            assert done["replayed"] + done["skipped"] == 20 and done["replayed"] >= 18, done
            wait_until(lambda: all(client_state(restarted, i) == "succeeded" for i in ids), 60,
                       "every replayed task to succeed")
            # Each ran twice (dead-lettered, then replayed); once more at most if it was in flight.
            extra = {i: payments.runs[i] for i in ids if payments.runs[i] != 2}
            assert all(i not in finished and n == 3 for i, n in extra.items()), (extra, finished & set(extra))
            actions = [rec["action"] for rec in ok(restarted, "GET", f"/api/audit?target=bulk_replay:{job['id']}")
                       ["records"]]
            assert actions == ["bulk_replay.resume", "bulk_replay.pause", "bulk_replay.start"], actions
            detail = next(e for e in ok(restarted, "GET", f"/api/tasks/{ids[0]}")["history"]
                          if e["state"] == "retry_wait")["detail"]
            assert f"(bulk replay {job['id']})" in detail and "card processor is back" in detail
        finally:
            restarted.terminate()


def client_state(node: NodeProcess, task_id: str) -> str:
    return ok(node, "GET", f"/api/tasks/{task_id}")["status"]


def test_search_by_trace_key_and_type_pages_on_indexes(node, taskring_env):
    trace = f"trace-{uuid.uuid4().hex[:8]}"
    key = f"order:{uuid.uuid4().hex[:8]}"
    with Client(node.target) as client:
        traced = [client.submit(NS, "report", {"i": i}, trace_id=trace, delay=600).task_id for i in range(3)]
        keyed = client.submit(NS, "report", {"k": 1}, unique_key=key, delay=600).task_id
        for i in range(5):
            client.submit(NS, "audit-me", {"i": i}, delay=7200)
    assert sorted(t["task_id"] for t in ok(node, "GET", f"/api/tasks?trace_id={trace}")["items"]) == sorted(traced)
    assert [t["task_id"] for t in ok(node, "GET", f"/api/tasks?namespace={NS}&unique_key={key}")["items"]] == [keyed]
    first = ok(node, "GET", f"/api/tasks?namespace={NS}&task_type=audit-me&status=pending&limit=3")
    rest = ok(node, "GET", f"/api/tasks?namespace={NS}&task_type=audit-me&status=pending&limit=3"
                           f"&before={first['next']}")
    assert len(first["items"]) == 3 and len(rest["items"]) == 2 and rest["next"] is None
    assert not {t["task_id"] for t in first["items"]} & {t["task_id"] for t in rest["items"]}
    assert len(ok(node, "GET", f"/api/tasks?namespace={NS}&task_type=audit-me")["items"]) == 5  # every status
    status, bad = call(node, "GET", f"/api/tasks?namespace={NS}")
    assert status == 400 and bad["error"].startswith("query")
    assert call(node, "GET", f"/api/tasks?namespace={NS}&task_type=x&status=lost")[0] == 400

    # Every statement a search runs reads an index range, never the whole table.
    from dispatcher.base.config import MySQLConfig
    from dispatcher.store.mysql import TaskStore
    from dispatcher.store.search import Query, SearchStore
    from dispatcher.store.shards import shards_of
    stack = taskring_env.stack
    store = TaskStore(MySQLConfig(host=stack.host, port=stack.mysql_port, user=stack.mysql_user,
                                  password=stack.mysql_password, database=taskring_env.database))
    store.start()
    try:
        search = SearchStore(shards_of(store))
        import datetime as dt
        cursor = (dt.datetime(2026, 1, 1), "x")
        queries = {"trace": Query(trace_id=trace), "unique key": Query(namespace=NS, unique_key=key),
                   "type+status": Query(namespace=NS, task_type="audit-me", status="pending",
                                        since=dt.datetime(2020, 1, 1), until=dt.datetime(2100, 1, 1)),
                   "type, every status": Query(namespace=NS, task_type="audit-me")}
        for name, q in queries.items():
            for statement in search.plans(q, before=cursor):
                for step in statement["plan"]:
                    assert step["type"] != "ALL" and step["key"], (name, statement)
                print(name, [(s["table"], s["type"], s["key"], s["rows"]) for s in statement["plan"]])
    finally:
        store.stop()


def test_a_replayed_dead_letter_takes_its_unique_key_again_or_is_refused(node, payments, taskring_env):
    with Client(node.target) as client:
        # Dead-lettered, its key free again (its holder is terminal): a new order takes it.
        [first] = dead_letter(client, [charge(7001, unique_key="order-7001")])
        newer = client.submit(NS, "charge", {"order": 7001, "card": "bad"}, unique_key="order-7001", delay=3600)
        assert not newer.duplicate and newer.task_id != first
        # The replay would run two tasks with one key: refused, naming the holder, nothing written.
        status, answer = call(node, "POST", f"/api/dead-letters/{first}/replay", {"reason": "retry the charge"})
        assert status == 409 and answer["code"] == "FAILED_PRECONDITION", answer
        assert f"held by task '{newer.task_id}' (pending)" in answer["error"], answer
        assert client.get(first).state == TaskState.DEAD_LETTERED
        assert ok(node, "GET", "/api/audit")["records"] == []
        # Once that task is gone, the replay takes the key back: a third order is its duplicate.
        client.cancel(newer.task_id)
        ok(node, "POST", f"/api/dead-letters/{first}/replay", {"reason": "retry the charge", "retries": 0})
        third = client.submit(NS, "charge", {"order": 7001, "card": "bad"}, unique_key="order-7001", delay=3600)
        assert third.duplicate and third.task_id == first
        wait_until(lambda: client.get(first).state == TaskState.DEAD_LETTERED, 30, "the replay to run (and fail)")
        # A dead letter whose key nobody took is replayed as before.
        [second] = dead_letter(client, [charge(7002, unique_key="order-7002")])
        ok(node, "POST", f"/api/dead-letters/{second}/replay", {"reason": "retry"})
        assert client.submit(NS, "charge", {"order": 7002}, unique_key="order-7002").task_id == second
