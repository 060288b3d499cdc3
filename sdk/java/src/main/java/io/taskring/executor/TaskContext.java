package io.taskring.executor;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.taskring.Payloads;
import io.taskring.errors.TaskStoppedException;
import java.time.Duration;
import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;
import taskring.v1.Taskring;

/**
 * One attempt of one task, as its handler sees it. {@code (taskId, attempt, epoch)}
 * identifies the delivery: delivery is at least once, so make effects idempotent on it;
 * the epoch tells a stale dispatcher's delivery from the current owner's.
 *
 * <p>Heartbeats: see {@link #heartbeat(Object)}. Graphs: see {@link #setResult(Object)} and
 * {@link #parentResults()}.
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
    private final long heartbeatTimeoutMs;
    private final String previousDetailsJson;
    private final boolean keepResult;
    private final List<Taskring.ParentResult> parentResultsWire;
    private final boolean parentResultsTruncated;
    // Decoded on first use (most handlers never ask); a race decodes twice into equal immutable maps.
    private Map<String, ParentResult> parentResults;
    // What the handler gave setResult (an async handler may give it from another thread).
    private volatile Object result;
    // Set once, by the attempt this context belongs to, before its handler runs.
    private DeliveryRunner.Attempt owner;
    // The first CANCEL or LOST answer, as what heartbeat() throws; null while the attempt goes on.
    private volatile TaskStoppedException stopped;
    private static final AtomicReferenceFieldUpdater<TaskContext, TaskStoppedException> STOPPED =
            AtomicReferenceFieldUpdater.newUpdater(TaskContext.class, TaskStoppedException.class, "stopped");

    TaskContext(String taskId, String namespace, String taskType, String payloadJson, ObjectNode payload,
                long attempt, long epoch, String traceId, long payloadVersion, String createdAt,
                long deadlineNanos, Instant deadline, long heartbeatTimeoutMs, String previousDetailsJson,
                boolean keepResult, List<Taskring.ParentResult> parentResults, boolean parentResultsTruncated) {
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
        this.heartbeatTimeoutMs = heartbeatTimeoutMs;
        this.previousDetailsJson = previousDetailsJson;
        this.keepResult = keepResult;
        this.parentResultsWire = parentResults;
        this.parentResultsTruncated = parentResultsTruncated;
    }

    void bind(DeliveryRunner.Attempt owner) {
        this.owner = owner;
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

    /**
     * How often this attempt must heartbeat, in ms; 0 when it need not (its task type declares
     * no heartbeat timeout). When it must, the executor sends the first heartbeat itself as the
     * handler starts; the handler then calls {@link #heartbeat} at least this often, or the
     * dispatcher counts the attempt as timed out (retryable) and refuses its outcome.
     */
    public long heartbeatTimeoutMs() { return heartbeatTimeoutMs; }

    /**
     * The details of the last heartbeat an earlier attempt of this task sent, decoded, to resume
     * where it stopped; null when there are none.
     */
    public JsonNode previousDetails() { return HeartbeatDetails.decode(previousDetailsJson); }

    /** {@link #previousDetails()} bound to a bean (or a Map) with Jackson; null when there are none. */
    public <T> T previousDetailsAs(Class<T> type) { return HeartbeatDetails.decode(previousDetailsJson, type); }

    /** {@link #previousDetails()} as the JSON text it came as; "" when there are none. */
    public String previousDetailsJson() { return previousDetailsJson; }

    // ---- graphs (docs/graphs.md) ----

    /**
     * Whether this task's result is kept: it is a task of a graph that other tasks depend on, so
     * what the handler gives {@link #setResult} is sent back and handed to them. When false, a
     * result is ignored (not even encoded).
     */
    public boolean keepsResult() { return keepResult; }

    /**
     * The handler's result, for the tasks of its graph that depend on this one (their
     * {@link #parentResults()}) and for {@code getGraph(..., withResults)}: any value Jackson
     * encodes as JSON (a Map, a JsonNode, a bean, a String, a number...); null for none. The last
     * call wins. It is encoded when the handler succeeds, and only when {@link #keepsResult()}:
     * one that is not JSON, or over 65,536 bytes of it, then fails the attempt non-retryably with
     * an error starting {@code "result: "} (a retry would return the same). Java handlers return
     * nothing, so this is their return value; an async handler calls it before its future completes.
     */
    public void setResult(Object value) { this.result = value; }

    /** What was given to {@link #setResult}; null when nothing was. */
    Object result() { return result; }

    /**
     * For a task of a graph, how each task it depends on ended, with its handler's result, by
     * key in the order the server sent them (empty for any other task). Decoded once, on the
     * first call.
     */
    public Map<String, ParentResult> parentResults() {
        Map<String, ParentResult> decoded = parentResults;
        if (decoded == null) {
            Map<String, ParentResult> m = new LinkedHashMap<>();
            for (Taskring.ParentResult p : parentResultsWire) {
                m.put(p.getKey(), new ParentResult(p.getKey(), p.getTaskId(), p.getOutcome(), p.getError(),
                        p.getResultJson(), parentResultsTruncated && p.getResultJson().isEmpty()
                                && p.getOutcome().equals("succeeded")));
            }
            decoded = Collections.unmodifiableMap(m);
            parentResults = decoded;
        }
        return decoded;
    }

    /**
     * The parents' results came to more than 1 MiB: those past it carry none here (each such
     * {@link ParentResult#truncated()}); read them with {@code getGraph(..., withResults)}.
     */
    public boolean parentResultsTruncated() { return parentResultsTruncated; }

    /** {@link #heartbeat(Object)} without details: the last ones sent stay the task's. */
    public void heartbeat() {
        beat("");
    }

    /**
     * Tell the dispatcher this attempt is alive, with {@code details} (encoded as JSON with
     * Jackson; null: none, the last ones stay) that the task's next attempt gets as
     * {@link #previousDetails()} should this one fail. Returns at once: the heartbeat is queued on
     * the Work stream and its answer comes later. When that answer says the task was cancelled or
     * this attempt is lost, the attempt is stopped: the handler's thread is interrupted (an async
     * handler's future is cancelled), {@link #isStopped()} turns true, the outcome is STOPPED
     * whatever the handler does, and later calls throw {@link TaskStoppedException}.
     *
     * <p>A delivery that came by the unary Execute call (a dispatcher without the Work stream)
     * has no channel for heartbeats: this checks the details and sends nothing, and that
     * dispatcher does not expect heartbeats either. Neither is anything sent once the attempt's
     * outcome is decided (its deadline passed).
     *
     * @throws IllegalArgumentException naming {@code details}: not encodable as JSON, or over
     *     65,536 bytes of it; nothing is sent
     * @throws TaskStoppedException the attempt was stopped (by an earlier heartbeat's answer)
     */
    public void heartbeat(Object details) {
        beat(HeartbeatDetails.encode(details));
    }

    /** {@link #heartbeat(Object)} with details that already are JSON text (sent as they are; "" or null: none). */
    public void heartbeatJson(String detailsJson) {
        beat(HeartbeatDetails.check(detailsJson));
    }

    /**
     * True once a heartbeat's answer said CANCEL or LOST: the attempt is over, its outcome is
     * STOPPED. Check it where an interrupt can be lost (a handler that catches InterruptedException).
     */
    public boolean isStopped() { return stopped != null; }

    private void beat(String detailsJson) {
        TaskStoppedException why = stopped;
        if (why != null) { // a new one, so its stack shows the handler's call
            throw new TaskStoppedException(why.verdict(), why.reason());
        }
        owner.heartbeat(detailsJson);
    }

    /** The attempt is stopped by {@code why}; false when it already was. */
    boolean stop(TaskStoppedException why) {
        return STOPPED.compareAndSet(this, null, why);
    }
}
