package io.taskring.executor;

import io.taskring.errors.NonRetryableException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import taskring.v1.Taskring;
import taskring.v1.Taskring.OutcomeKind;

/** Building Outcome messages, worded as the Python executor words them. */
final class Outcomes {
    /** Stack traces are stored with the task's history; keep the innermost frames of long ones. */
    static final int MAX_TRACE_CHARS = 16_384;

    private Outcomes() {}

    static long nowMs() {
        return System.currentTimeMillis();
    }

    static Taskring.Outcome of(Taskring.Delivery d, OutcomeKind kind, String error, String trace,
                               long startedMs, long finishedMs) {
        return Taskring.Outcome.newBuilder()
                .setTaskId(d.getTask().getTaskId())
                .setAttempt(d.getAttempt())
                .setKind(kind)
                .setError(error)
                .setStackTrace(trace)
                .setStartedAtMs(startedMs)
                .setFinishedAtMs(finishedMs)
                .build();
    }

    /**
     * The handler returned: SUCCEEDED, with its result when the delivery keeps it, or a
     * non-retryable failure ("result: ...") when that result cannot be kept.
     */
    static Taskring.Outcome succeeded(Taskring.Delivery d, TaskContext ctx, long startedMs) {
        if (!d.getKeepResult()) {
            return of(d, OutcomeKind.OUTCOME_KIND_SUCCEEDED, "", "", startedMs, nowMs());
        }
        KeptResult kept = KeptResult.of(ctx.result());
        if (!kept.error().isEmpty()) {
            return of(d, OutcomeKind.OUTCOME_KIND_NON_RETRYABLE_FAILURE, kept.error(), "", startedMs, nowMs());
        }
        return of(d, OutcomeKind.OUTCOME_KIND_SUCCEEDED, "", "", startedMs, nowMs()).toBuilder()
                .setResultJson(kept.json()).build();
    }

    /** An outcome that never ran a handler. */
    static Taskring.Outcome immediate(Taskring.Delivery d, OutcomeKind kind, String error) {
        long now = nowMs();
        return of(d, kind, error, "", now, now);
    }

    static Taskring.Outcome failure(Taskring.Delivery d, Throwable error, long startedMs) {
        Throwable e = unwrap(error);
        OutcomeKind kind = e instanceof NonRetryableException
                ? OutcomeKind.OUTCOME_KIND_NON_RETRYABLE_FAILURE
                : OutcomeKind.OUTCOME_KIND_RETRYABLE_FAILURE;
        return of(d, kind, describe(e), trim(stackTrace(e)), startedMs, nowMs());
    }

    /** {@code "ClassName: message"}, as Python's {@code f"{type(exc).__name__}: {exc}"}. */
    static String describe(Throwable e) {
        String msg = e.getMessage();
        return e.getClass().getSimpleName() + ": " + (msg == null ? "" : msg);
    }

    static String stackTrace(Throwable e) {
        StringWriter out = new StringWriter();
        e.printStackTrace(new PrintWriter(out));
        return out.toString();
    }

    static String stackOf(Thread thread) {
        StringBuilder out = new StringBuilder("handler thread still running at:\n");
        for (StackTraceElement frame : thread.getStackTrace()) {
            out.append("\tat ").append(frame).append('\n');
        }
        return out.toString();
    }

    static String trim(String trace) {
        if (trace.length() <= MAX_TRACE_CHARS) {
            return trace;
        }
        return "...(truncated)\n" + trace.substring(trace.length() - MAX_TRACE_CHARS);
    }

    /** The handler's own exception, not the future machinery around it. */
    static Throwable unwrap(Throwable t) {
        Throwable e = t;
        while ((e instanceof CompletionException || e instanceof ExecutionException) && e.getCause() != null
                && !(e instanceof CancellationException)) {
            e = e.getCause();
        }
        return e;
    }
}
