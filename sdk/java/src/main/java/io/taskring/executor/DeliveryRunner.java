package io.taskring.executor;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.taskring.Payloads;
import io.taskring.errors.ProtocolException;
import io.taskring.errors.TaskStoppedException;
import java.time.Instant;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import taskring.v1.Taskring;
import taskring.v1.Taskring.OutcomeKind;

/**
 * Runs one delivery to one outcome: the executor's hot path (Python: {@code _runner.py}).
 *
 * <ul>
 *   <li>The deadline is {@code received + timeout_ms}: the dispatcher's RPC deadline is the
 *       task timeout, so counting from receipt keeps the outcome inside the time the
 *       dispatcher still listens. A delivery that waits for a slot past it is TIMED_OUT
 *       without running.
 *   <li>A delivery with {@code start_within_ms} set that gets its slot later than that after
 *       receipt is not run at all: the slot is given back and the answer is NOT_STARTED
 *       ({@code started_at_ms} 0), which does not spend the attempt. The dispatcher's lease
 *       may have a new owner by then, which runs the attempt itself. The same holds for one
 *       with {@code start_by_unix_ms} set that gets its slot at or after that instant (a batch
 *       held up on its way); whichever comes first wins.
 *   <li>Each attempt's outcome is one future completed first-wins by whoever gets there
 *       first: the handler, the deadline timer, or a stop that gives up on it. So a
 *       handler that overruns is answered TIMED_OUT at its deadline, without waiting for
 *       its thread, which is interrupted.
 *   <li>The slot, though, is held until the handler really returns: a hung handler
 *       visibly costs capacity instead of piling up threads without bound.
 *   <li>Heartbeats (Work stream only): a delivery with {@code heartbeat_timeout_ms} sends its
 *       first heartbeat as its handler starts, so its lease counts from then. An answer that
 *       says CANCEL or LOST stops the attempt as the deadline does: it is answered STOPPED at
 *       once and its handler interrupted. Nothing of this is allocated for a delivery that
 *       neither has a heartbeat timeout nor calls heartbeat().
 * </ul>
 */
final class DeliveryRunner {
    private static final Logger log = LoggerFactory.getLogger(DeliveryRunner.class);

    /** Deadline when neither the delivery nor the task carries one (a dispatcher always should). */
    static final long FALLBACK_TIMEOUT_MS = 300_000;

    private final Map<String, Handler> handlers;
    private final Slots slots;
    private final ExecutorService pool;
    private final ScheduledExecutorService timer;
    private final Set<Attempt> pending = ConcurrentHashMap.newKeySet();
    private volatile boolean stopping;

    /** One delivery in progress. */
    static final class Attempt {
        final Taskring.Delivery delivery;
        final TaskContext ctx;
        final Handler handler;
        final long timeoutMs;
        final HeartbeatLine line; // null: came by Execute, heartbeats go nowhere
        final CompletableFuture<Taskring.Outcome> outcome = new CompletableFuture<>();
        volatile long startedMs;
        volatile Thread thread;
        volatile Future<?> work;
        volatile CompletableFuture<Void> asyncWork;
        volatile ScheduledFuture<?> deadlineTimer;

        Attempt(Taskring.Delivery delivery, TaskContext ctx, Handler handler, long timeoutMs, HeartbeatLine line) {
            this.delivery = delivery;
            this.ctx = ctx;
            this.handler = handler;
            this.timeoutMs = timeoutMs;
            this.line = line;
            ctx.bind(this);
        }

        /** The handler's heartbeat(), its details checked. */
        void heartbeat(String detailsJson) {
            if (line != null) {
                line.heartbeat(this, detailsJson);
            }
        }

        /** Stop whatever still runs for this attempt once its outcome is decided elsewhere. */
        void interrupt() {
            Future<?> w = work;
            if (w != null) {
                w.cancel(true);
            }
            CompletableFuture<Void> a = asyncWork;
            if (a != null) {
                a.cancel(true);
            }
        }
    }

    DeliveryRunner(Map<String, Handler> handlers, int maxInFlight, ExecutorService pool, ScheduledExecutorService timer) {
        this.handlers = Map.copyOf(handlers);
        this.slots = new Slots(maxInFlight, timer);
        this.pool = pool;
        this.timer = timer;
    }

    /** Handlers running now, including timed-out ones whose thread has not returned. */
    int inFlight() {
        return slots.inUse();
    }

    /** Deliveries waiting for a free slot. */
    int waiting() {
        return slots.waiting();
    }

    /** A delivery of the unary Execute call: no heartbeats. Never completes exceptionally. */
    CompletableFuture<Taskring.Outcome> run(Taskring.Delivery d, long receivedNanos) {
        return run(d, receivedNanos, null);
    }

    /** A delivery whose heartbeats go up {@code line} (null: nowhere). Never completes exceptionally. */
    CompletableFuture<Taskring.Outcome> run(Taskring.Delivery d, long receivedNanos, HeartbeatLine line) {
        Taskring.Task task = d.getTask();
        try {
            Handler handler = handlers.get(Handler.key(task.getNamespace(), task.getTaskType()));
            if (handler == null) {
                return done(Outcomes.immediate(d, OutcomeKind.OUTCOME_KIND_NO_HANDLER,
                        "no handler for task type '" + task.getTaskType() + "' of namespace '"
                                + task.getNamespace() + "' in this executor"));
            }
            long timeoutMs = timeoutMs(d);
            long deadlineNanos = receivedNanos + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
            ObjectNode payload;
            try {
                payload = Payloads.decode(task.getPayloadJson());
            } catch (ProtocolException e) { // a payload the server should never have accepted
                return done(Outcomes.immediate(d, OutcomeKind.OUTCOME_KIND_NON_RETRYABLE_FAILURE,
                        "payload_json: not a JSON object"));
            }
            if (stopping) {
                return done(Outcomes.immediate(d, OutcomeKind.OUTCOME_KIND_RETRYABLE_FAILURE, "executor is stopping"));
            }
            Instant deadline = Instant.now().plusNanos(deadlineNanos - System.nanoTime());
            TaskContext ctx = new TaskContext(task.getTaskId(), task.getNamespace(), task.getTaskType(),
                    task.getPayloadJson().isEmpty() ? "{}" : task.getPayloadJson(), payload,
                    Integer.toUnsignedLong(d.getAttempt()), d.getEpoch(), task.getTraceId(),
                    Integer.toUnsignedLong(task.getPayloadVersion()), task.getCreatedAt(), deadlineNanos, deadline,
                    Integer.toUnsignedLong(d.getHeartbeatTimeoutMs()), d.getHeartbeatDetailsJson(),
                    d.getKeepResult(), d.getParentResultsList(), d.getParentResultsTruncated());
            Attempt a = new Attempt(d, ctx, handler, timeoutMs, line);
            pending.add(a);
            a.outcome.whenComplete((o, e) -> pending.remove(a));
            slots.acquire(deadlineNanos).thenAccept(granted -> {
                if (granted) {
                    start(a, receivedNanos, deadlineNanos);
                } else {
                    a.outcome.complete(Outcomes.immediate(d, OutcomeKind.OUTCOME_KIND_TIMED_OUT,
                            "deadline of " + timeoutMs + " ms passed while waiting for a free slot (max_in_flight is reached)"));
                }
            });
            return a.outcome;
        } catch (RuntimeException e) { // a bug here must not fail the whole batch
            log.error("executor failed to run task {}", task.getTaskId(), e);
            long now = Outcomes.nowMs();
            return done(Outcomes.of(d, OutcomeKind.OUTCOME_KIND_RETRYABLE_FAILURE, "executor error: " + Outcomes.describe(e),
                    Outcomes.trim(Outcomes.stackTrace(e)), now, now));
        }
    }

    /** delivery.timeout_ms, else the task's, else a fallback. */
    static long timeoutMs(Taskring.Delivery d) {
        if (d.getTimeoutMs() != 0) {
            return Integer.toUnsignedLong(d.getTimeoutMs());
        }
        if (d.getTask().hasTimeoutMs() && d.getTask().getTimeoutMs() != 0) {
            return Integer.toUnsignedLong(d.getTask().getTimeoutMs());
        }
        return FALLBACK_TIMEOUT_MS;
    }

    /**
     * Why the delivery must not start now ("" when it may): the end of the dispatcher's lease,
     * as time since arrival ({@code start_within_ms}) or as an instant ({@code start_by_unix_ms}).
     */
    static String tooLateToStart(Taskring.Delivery d, long receivedNanos) {
        long startWithinMs = Integer.toUnsignedLong(d.getStartWithinMs());
        if (startWithinMs != 0 && System.nanoTime() - receivedNanos > TimeUnit.MILLISECONDS.toNanos(startWithinMs)) {
            return "not started within " + startWithinMs + " ms of arrival (max_in_flight is reached)";
        }
        long startByUnixMs = d.getStartByUnixMs();
        if (startByUnixMs != 0 && Outcomes.nowMs() >= startByUnixMs) {
            return "not started by " + startByUnixMs + " (unix ms): the dispatcher's lease had run out when it arrived";
        }
        return "";
    }

    private void start(Attempt a, long receivedNanos, long deadlineNanos) {
        if (a.outcome.isDone()) { // given up (stop) while it waited for the slot
            slots.release();
            return;
        }
        String late = tooLateToStart(a.delivery, receivedNanos);
        if (!late.isEmpty()) {
            // Past what the dispatcher's lease allowed: its slot may have a new
            // owner by now, which runs the attempt itself. Not run, not spent.
            slots.release();
            a.outcome.complete(Outcomes.of(a.delivery, OutcomeKind.OUTCOME_KIND_NOT_STARTED, late, "",
                    0, Outcomes.nowMs()));
            return;
        }
        a.startedMs = Outcomes.nowMs();
        if (a.ctx.heartbeatTimeoutMs() > 0) {
            // The SDK's own first heartbeat: the lease counts from the start, not from the
            // handler's first call. Before the handler runs, so it is the first on the stream.
            a.heartbeat("");
        }
        try {
            a.work = pool.submit(() -> execute(a));
        } catch (RejectedExecutionException e) { // the pool is shut down: the executor is stopping
            slots.release();
            a.outcome.complete(Outcomes.immediate(a.delivery, OutcomeKind.OUTCOME_KIND_RETRYABLE_FAILURE, "executor is stopping"));
            return;
        }
        if (a.ctx.isStopped()) { // stopped by an answer before `work` was set: stop() could not interrupt it
            a.interrupt();
        }
        a.deadlineTimer = timer.schedule(() -> onDeadline(a), deadlineNanos - System.nanoTime(), TimeUnit.NANOSECONDS);
        a.outcome.whenComplete((o, e) -> {
            ScheduledFuture<?> t = a.deadlineTimer;
            if (t != null) {
                t.cancel(false);
            }
        });
    }

    /** On a pool thread. Releases the slot only when the handler is really done. */
    private void execute(Attempt a) {
        if (a.outcome.isDone()) { // decided before the handler began (stopped by a heartbeat's answer, or timed out): skip it
            slots.release();
            return;
        }
        if (a.handler.sync() != null) {
            a.thread = Thread.currentThread();
            try {
                ExecuteSpan.run(a.handler.sync(), a.ctx); // in a span when the task carries a traceparent
                a.outcome.complete(Outcomes.succeeded(a.delivery, a.ctx, a.startedMs));
            } catch (Throwable t) { // an Error in a handler is still a failed task
                a.outcome.complete(Outcomes.failure(a.delivery, t, a.startedMs));
            } finally {
                a.thread = null;
                Thread.interrupted(); // do not leak an interrupt to the next task on this thread
                slots.release();
            }
            return;
        }
        CompletableFuture<Void> f;
        try {
            f = ExecuteSpan.run(a.handler.async(), a.ctx); // in a span when the task carries a traceparent
            if (f == null) {
                throw new IllegalStateException("the async handler returned null instead of a future");
            }
        } catch (Throwable t) {
            slots.release();
            a.outcome.complete(Outcomes.failure(a.delivery, t, a.startedMs));
            return;
        }
        a.asyncWork = f;
        f.whenComplete((v, t) -> {
            slots.release();
            a.outcome.complete(t == null
                    ? Outcomes.succeeded(a.delivery, a.ctx, a.startedMs)
                    : Outcomes.failure(a.delivery, t, a.startedMs));
        });
        if (a.outcome.isDone()) { // timed out before the handler even returned its future
            f.cancel(true);
        }
    }

    private void onDeadline(Attempt a) {
        if (a.outcome.isDone()) {
            return;
        }
        boolean sync = a.handler.sync() != null;
        Thread t = a.thread;
        String trace = sync && t != null ? Outcomes.trim(Outcomes.stackOf(t)) : "";
        String error = sync
                ? "handler exceeded its timeout of " + a.timeoutMs + " ms (its thread was interrupted)"
                : "handler exceeded its timeout of " + a.timeoutMs + " ms and was cancelled";
        long started = a.startedMs;
        if (a.outcome.complete(Outcomes.of(a.delivery, OutcomeKind.OUTCOME_KIND_TIMED_OUT, error, trace, started, Outcomes.nowMs()))) {
            if (sync) {
                log.warn("task {}: handler for {} exceeded {} ms; interrupted, it keeps its slot until it returns",
                        a.ctx.taskId(), a.ctx.taskType(), a.timeoutMs);
            }
            a.interrupt();
        }
    }

    /**
     * A heartbeat's answer said CANCEL or LOST: the attempt is over. Like a deadline, its outcome
     * (STOPPED) is decided at once and its handler interrupted; the slot is held until the handler
     * returns. Whatever the handler then returns or throws changes nothing.
     */
    void stop(Attempt a, TaskStoppedException.Verdict verdict, String reason) {
        TaskStoppedException why = new TaskStoppedException(verdict, reason);
        if (!a.ctx.stop(why)) {
            return; // already stopped
        }
        // The flag first, so a handler woken by the interrupt sees isStopped().
        if (a.outcome.complete(Outcomes.of(a.delivery, OutcomeKind.OUTCOME_KIND_STOPPED, why.getMessage(), "",
                a.startedMs, Outcomes.nowMs()))) {
            log.info("task {} attempt {}: stopped ({}); its handler is interrupted", a.ctx.taskId(), a.ctx.attempt(),
                    why.getMessage());
            a.interrupt();
        }
    }

    /** Refuse deliveries from now on (those already received still run). */
    void refuseNew() {
        stopping = true;
    }

    /** Answer every unfinished delivery as retryable, so the dispatcher re-queues it; interrupt its handler. */
    int abandonAll(String reason) {
        int n = 0;
        for (Attempt a : pending) {
            if (a.outcome.complete(Outcomes.of(a.delivery, OutcomeKind.OUTCOME_KIND_RETRYABLE_FAILURE, reason, "",
                    a.startedMs == 0 ? Outcomes.nowMs() : a.startedMs, Outcomes.nowMs()))) {
                n++;
                a.interrupt();
            }
        }
        return n;
    }

    private static CompletableFuture<Taskring.Outcome> done(Taskring.Outcome o) {
        return CompletableFuture.completedFuture(o);
    }
}
