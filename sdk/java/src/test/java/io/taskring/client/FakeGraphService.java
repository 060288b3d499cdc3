package io.taskring.client;

import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import taskring.v1.GraphServiceGrpc;
import taskring.v1.Taskring;

/**
 * A fake node's GraphService with the real one's outline: a submit answers each task by key with
 * a derived id, state WAITING for one with parents (QUEUED without), and is a duplicate when the
 * same graph id comes again with the same request; a cycle of two is refused naming the edge as
 * the server does; a get answers {@link #graph} as set by the test (results only when asked), or
 * NOT_FOUND; a cancel answers {@link #cancelled} as set by the test, or NOT_FOUND. Or every call fails
 * with {@link #failWith}. Records the requests.
 */
final class FakeGraphService extends GraphServiceGrpc.GraphServiceImplBase {
    final List<Object> requests = Collections.synchronizedList(new ArrayList<>());
    final AtomicInteger calls = new AtomicInteger();
    final Map<String, Taskring.SubmitGraphRequest> submitted = Collections.synchronizedMap(new HashMap<>());
    volatile Status failWith;
    /** What GetGraph answers (with every result_json set); null: NOT_FOUND. */
    volatile Taskring.GetGraphResponse graph;
    /** What CancelGraph answers; null: NOT_FOUND. */
    volatile Taskring.CancelGraphResponse cancelled;

    private boolean failed(Object request, StreamObserver<?> out) {
        calls.incrementAndGet();
        requests.add(request);
        if (failWith != null) {
            out.onError(failWith.asRuntimeException());
            return true;
        }
        return false;
    }

    @Override
    public void submitGraph(Taskring.SubmitGraphRequest req, StreamObserver<Taskring.SubmitGraphResponse> out) {
        if (failed(req, out)) {
            return;
        }
        for (int i = 0; i < req.getTasksCount(); i++) {
            Taskring.GraphTask t = req.getTasks(i);
            for (int j = 0; j < t.getDependsOnCount(); j++) {
                String parent = t.getDependsOn(j).getKey();
                boolean back = req.getTasksList().stream().anyMatch(p -> p.getKey().equals(parent)
                        && p.getDependsOnList().stream().anyMatch(d -> d.getKey().equals(t.getKey())));
                if (back) {
                    out.onError(Status.INVALID_ARGUMENT.withDescription("tasks[" + i + "].depends_on[" + j
                            + "]: closes the cycle " + t.getKey() + " -> " + parent + " -> " + t.getKey()).asRuntimeException());
                    return;
                }
            }
        }
        String id = req.getNamespace() + "/" + req.getGraphId();
        Taskring.SubmitGraphRequest before = submitted.putIfAbsent(id, req);
        Taskring.SubmitGraphResponse.Builder r = Taskring.SubmitGraphResponse.newBuilder().setGraphId(req.getGraphId())
                .setDuplicate(req.equals(before));
        for (int i = 0; i < req.getTasksCount(); i++) {
            Taskring.GraphTask t = req.getTasks(i);
            r.addTasks(Taskring.GraphTaskRef.newBuilder().setKey(t.getKey()).setTaskId("id-" + t.getKey()).setSlot(i)
                    .setState(t.getDependsOnCount() > 0 ? Taskring.TaskState.TASK_STATE_WAITING
                            : Taskring.TaskState.TASK_STATE_QUEUED));
        }
        out.onNext(r.build());
        out.onCompleted();
    }

    @Override
    public void getGraph(Taskring.GetGraphRequest req, StreamObserver<Taskring.GetGraphResponse> out) {
        if (failed(req, out)) {
            return;
        }
        Taskring.GetGraphResponse g = graph;
        if (g == null) {
            out.onError(Status.NOT_FOUND.withDescription("graph " + req.getNamespace() + "/" + req.getGraphId()
                    + " does not exist").asRuntimeException());
            return;
        }
        if (!req.getWithResults()) {
            Taskring.GetGraphResponse.Builder b = g.toBuilder();
            b.getNodesBuilderList().forEach(n -> n.setResultJson(""));
            g = b.build();
        }
        out.onNext(g);
        out.onCompleted();
    }

    @Override
    public void cancelGraph(Taskring.CancelGraphRequest req, StreamObserver<Taskring.CancelGraphResponse> out) {
        if (failed(req, out)) {
            return;
        }
        Taskring.CancelGraphResponse c = cancelled;
        if (c == null) {
            out.onError(Status.NOT_FOUND.withDescription("graph " + req.getNamespace() + "/" + req.getGraphId()
                    + " does not exist").asRuntimeException());
            return;
        }
        out.onNext(c);
        out.onCompleted();
    }

    /** Two tasks cancelled, ship and email left to finish. */
    static Taskring.CancelGraphResponse twoCancelledTwoRunning() {
        return Taskring.CancelGraphResponse.newBuilder().setCancelled(2).addRunning("ship").addRunning("email").build();
    }

    /** The graph charge -> ship, charge -> email (ignore), ship + email -> close, finished, email dead-lettered. */
    static Taskring.GetGraphResponse finishedOrder() {
        return Taskring.GetGraphResponse.newBuilder().setGraphId("order-7").setNamespace("shop").setState("finished")
                .putCounts("succeeded", 3).putCounts("dead_lettered", 1)
                .addNodes(node("charge", Taskring.TaskState.TASK_STATE_SUCCEEDED, "{\"type\":\"charge\",\"saw\":{}}"))
                .addNodes(node("ship", Taskring.TaskState.TASK_STATE_SUCCEEDED, "{\"tracking\":\"Z-1\"}")
                        .addDependsOn(edge("charge", Taskring.OnFailure.ON_FAILURE_SKIP, "succeeded")))
                .addNodes(node("email", Taskring.TaskState.TASK_STATE_DEAD_LETTERED, "")
                        .setReason("NonRetryableException: no such address").setAttempts(1)
                        .addDependsOn(edge("charge", Taskring.OnFailure.ON_FAILURE_UNSPECIFIED, "succeeded")))
                .addNodes(node("close", Taskring.TaskState.TASK_STATE_SUCCEEDED, "")
                        .setJoin(Taskring.Join.newBuilder().setRule(Taskring.JoinRule.JOIN_RULE_AT_LEAST).setAtLeast(2))
                        .addDependsOn(edge("ship", Taskring.OnFailure.ON_FAILURE_SKIP, "succeeded"))
                        .addDependsOn(edge("email", Taskring.OnFailure.ON_FAILURE_IGNORE, "ignored")))
                .build();
    }

    private static Taskring.GraphNode.Builder node(String key, Taskring.TaskState state, String resultJson) {
        return Taskring.GraphNode.newBuilder().setKey(key).setTaskId("id-" + key).setState(state).setAttempts(1)
                .setResultJson(resultJson);
    }

    private static Taskring.GraphEdge edge(String parent, Taskring.OnFailure policy, String outcome) {
        return Taskring.GraphEdge.newBuilder().setParentKey(parent).setOnFailure(policy).setOutcome(outcome).build();
    }
}
