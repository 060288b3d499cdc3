package io.taskring.client;

import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import taskring.v1.TaskServiceGrpc;
import taskring.v1.Taskring;

/** One fake dispatcher node: counts calls, records requests, answers OK or a fixed error. */
final class FakeTaskService extends TaskServiceGrpc.TaskServiceImplBase {
    final String name;
    final AtomicInteger calls = new AtomicInteger();
    final List<Object> requests = Collections.synchronizedList(new ArrayList<>());
    volatile Status failWith;

    FakeTaskService(String name) {
        this.name = name;
    }

    private boolean failed(Object request, StreamObserver<?> out) {
        calls.incrementAndGet();
        requests.add(request);
        Status s = failWith;
        if (s != null) {
            out.onError(s.asRuntimeException());
            return true;
        }
        return false;
    }

    @Override
    public void submit(Taskring.SubmitRequest req, StreamObserver<Taskring.SubmitResponse> out) {
        if (failed(req, out)) {
            return;
        }
        String id = req.getTask().getTaskId().isEmpty() ? "srv-" + name : req.getTask().getTaskId();
        out.onNext(Taskring.SubmitResponse.newBuilder().setTaskId(id).setState(Taskring.TaskState.TASK_STATE_ACCEPTED)
                .setDueAt("2030-01-02T03:04:05.678Z").setSlot(7).build());
        out.onCompleted();
    }

    @Override
    public void submitBatch(Taskring.SubmitBatchRequest req, StreamObserver<Taskring.SubmitBatchResponse> out) {
        if (failed(req, out)) {
            return;
        }
        Taskring.SubmitBatchResponse.Builder r = Taskring.SubmitBatchResponse.newBuilder();
        for (int i = 0; i < req.getTasksCount(); i++) {
            r.addResults(Taskring.SubmitResponse.newBuilder().setTaskId("b" + i)
                    .setState(Taskring.TaskState.TASK_STATE_QUEUED).setSlot(i));
        }
        out.onNext(r.build());
        out.onCompleted();
    }

    @Override
    public void cancel(Taskring.CancelRequest req, StreamObserver<Taskring.CancelResponse> out) {
        if (failed(req, out)) {
            return;
        }
        out.onNext(Taskring.CancelResponse.newBuilder().setTaskId(req.getTaskId())
                .setState(Taskring.TaskState.TASK_STATE_CANCELLED).build());
        out.onCompleted();
    }

    @Override
    public void getTask(Taskring.GetTaskRequest req, StreamObserver<Taskring.GetTaskResponse> out) {
        if (failed(req, out)) {
            return;
        }
        out.onNext(Taskring.GetTaskResponse.newBuilder()
                .setTask(Taskring.Task.newBuilder().setTaskId(req.getTaskId()).setNamespace("shop")
                        .setTaskType("cancel_order").setPayloadJson("{\"order\":42}"))
                .setState(Taskring.TaskState.TASK_STATE_SUCCEEDED)
                .setAttempts(1)
                .setWaiting("concurrency limit per_type (at most 20 running)")
                .addHistory(Taskring.TaskEvent.newBuilder().setState(Taskring.TaskState.TASK_STATE_ACCEPTED)
                        .setAt("2030-01-02T03:04:05.678Z").setNode(name))
                .addHistory(Taskring.TaskEvent.newBuilder().setState(Taskring.TaskState.TASK_STATE_SUCCEEDED)
                        .setAt("2030-01-02T03:04:06.000Z").setNode(name).setAttempt(1))
                .build());
        out.onCompleted();
    }
}
