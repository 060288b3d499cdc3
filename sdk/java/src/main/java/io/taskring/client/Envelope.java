package io.taskring.client;

import io.taskring.Instants;
import io.taskring.Payloads;
import io.taskring.Priority;
import io.taskring.TaskState;
import io.taskring.WireLimits;
import io.taskring.errors.ProtocolException;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import taskring.v1.Taskring;

/**
 * Conversions between the SDK's types and the wire messages: the one place that knows
 * the wire's conventions (Python: {@code _envelope.py}). Unset optional fields mean
 * "the server's default", so they are left unset, never sent as zero.
 */
public final class Envelope {
    private Envelope() {}

    /** The wire Task of a spec (already checked by its builder). */
    public static Taskring.Task toWire(TaskSpec spec) {
        return toWire(spec, "");
    }

    /**
     * The wire Task of a spec whose {@code trace_id}, when the spec has none, is
     * {@code traceparent} (the submitting span's; "" for none). A trace id the caller set is kept.
     */
    public static Taskring.Task toWire(TaskSpec spec, String traceparent) {
        Taskring.Task.Builder t = Taskring.Task.newBuilder()
                .setNamespace(spec.namespace())
                .setTaskType(spec.taskType())
                .setPayloadJson(spec.payloadJson())
                .setPayloadVersion((int) spec.payloadVersion())
                .setPriority(spec.priority().toWire());
        if (spec.isIdempotent()) {
            t.setTaskId(spec.taskId());
        }
        if (spec.delay() != null) {
            t.setDelayMs(WireLimits.uint64Millis(spec.delay(), "delay"));
        }
        if (spec.scheduleTime() != null) {
            t.setScheduleTime(Instants.format(spec.scheduleTime()));
        }
        if (spec.timeout() != null) {
            t.setTimeoutMs((int) WireLimits.uint64Millis(spec.timeout(), "timeout"));
        }
        if (spec.maxRetries() != null) {
            t.setMaxRetries(spec.maxRetries());
        }
        if (spec.retryPolicy() != null) {
            t.setRetryPolicy(spec.retryPolicy().toWire());
        }
        if (spec.uniqueKey() != null && !spec.uniqueKey().isEmpty()) {
            t.setUniqueKey(spec.uniqueKey());
        }
        if (spec.traceId() != null && !spec.traceId().isEmpty()) {
            t.setTraceId(spec.traceId());
        } else if (!traceparent.isEmpty()) {
            t.setTraceId(traceparent);
        }
        return t.build();
    }

    public static SubmitResult fromWire(Taskring.SubmitResponse r) {
        return new SubmitResult(r.getTaskId(), r.getDuplicate(), TaskState.fromWire(r.getStateValue()),
                Instants.parseOrNull(r.getDueAt()), r.getSlot());
    }

    public static List<SubmitResult> fromWire(Taskring.SubmitBatchResponse r, int expected) {
        if (r.getResultsCount() != expected) {
            throw new ProtocolException("SubmitBatch returned " + r.getResultsCount() + " results for " + expected + " tasks");
        }
        List<SubmitResult> out = new ArrayList<>(expected);
        for (Taskring.SubmitResponse one : r.getResultsList()) {
            out.add(fromWire(one));
        }
        return List.copyOf(out);
    }

    public static TaskInfo fromWire(Taskring.GetTaskResponse r) {
        Taskring.Task task = r.getTask();
        List<TaskEvent> history = new ArrayList<>(r.getHistoryCount());
        for (Taskring.TaskEvent ev : r.getHistoryList()) {
            OffsetDateTime at = Instants.parseOrNull(ev.getAt());
            if (at == null) {
                throw new ProtocolException("server sent an empty history.at");
            }
            history.add(new TaskEvent(TaskState.fromWire(ev.getStateValue()), at, ev.getNode(),
                    Integer.toUnsignedLong(ev.getAttempt()), ev.getDetail()));
        }
        return new TaskInfo(
                task.getTaskId(),
                task.getNamespace(),
                task.getTaskType(),
                TaskState.fromWire(r.getStateValue()),
                Integer.toUnsignedLong(r.getAttempts()),
                Instants.parseOrNull(r.getDueAt()),
                r.getSlot(),
                Payloads.decode(task.getPayloadJson()),
                Integer.toUnsignedLong(task.getPayloadVersion()),
                Priority.fromWire(task.getPriorityValue()),
                r.getLastError(),
                r.getLastStackTrace(),
                List.copyOf(history),
                r.getWaiting(),
                Instants.parseOrNull(task.getCreatedAt()),
                Instants.parseOrNull(task.getScheduleTime()),
                task.hasTimeoutMs() ? Duration.ofMillis(Integer.toUnsignedLong(task.getTimeoutMs())) : null,
                task.hasMaxRetries() ? task.getMaxRetries() : null,
                task.getUniqueKey(),
                task.getTraceId());
    }
}
