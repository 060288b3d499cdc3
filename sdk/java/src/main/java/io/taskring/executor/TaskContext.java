package io.taskring.executor;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.taskring.Payloads;
import java.time.Duration;
import java.time.Instant;

/**
 * One attempt of one task, as its handler sees it. {@code (taskId, attempt, epoch)}
 * identifies the delivery: delivery is at least once, so make effects idempotent on it;
 * the epoch tells a stale dispatcher's delivery from the current owner's.
 */
public final class TaskContext {
    private final String taskId;
    private final String namespace;
    private final String taskType;
    private final String payloadJson;
    private final ObjectNode payload;
    private final long attempt;
    private final long epoch;
    private final String traceId;
    private final long payloadVersion;
    private final String createdAt;
    private final long deadlineNanos;
    private final Instant deadline;

    TaskContext(String taskId, String namespace, String taskType, String payloadJson, ObjectNode payload,
                long attempt, long epoch, String traceId, long payloadVersion, String createdAt,
                long deadlineNanos, Instant deadline) {
        this.taskId = taskId;
        this.namespace = namespace;
        this.taskType = taskType;
        this.payloadJson = payloadJson;
        this.payload = payload;
        this.attempt = attempt;
        this.epoch = epoch;
        this.traceId = traceId;
        this.payloadVersion = payloadVersion;
        this.createdAt = createdAt;
        this.deadlineNanos = deadlineNanos;
        this.deadline = deadline;
    }

    public String taskId() { return taskId; }
    public String namespace() { return namespace; }
    public String taskType() { return taskType; }

    /** The payload as submitted, JSON text of an object. */
    public String payloadJson() { return payloadJson; }

    /** The payload, decoded; a copy, so changing it changes nothing upstream. */
    public ObjectNode payload() { return payload.deepCopy(); }

    /** The payload bound to a bean (or a Map) with Jackson. */
    public <T> T payloadAs(Class<T> type) { return Payloads.decode(payloadJson, type); }

    /** 1 for the first run, 2 for the first retry, ... */
    public long attempt() { return attempt; }

    /** Ownership epoch of the task's slot at dispatch (the fencing token). */
    public long epoch() { return epoch; }

    public String traceId() { return traceId; }
    public long payloadVersion() { return payloadVersion; }

    /** When the task was accepted (RFC 3339, as the server recorded it); may be empty. */
    public String createdAt() { return createdAt; }

    /**
     * When this attempt times out. Counted from when the executor received the delivery,
     * so time spent waiting for a free slot (max in flight) is part of the budget.
     */
    public Instant deadline() { return deadline; }

    /** Time left before the deadline (negative once passed): use it as the timeout of your calls. */
    public Duration remaining() { return Duration.ofNanos(deadlineNanos - System.nanoTime()); }
}
