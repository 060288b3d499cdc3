package io.taskring.client;

import java.util.Locale;
import taskring.v1.Taskring;

/**
 * What the failure (dead letter, or under {@link #CONTINUE} a failed attempt) of a task means to one
 * task that comes after it (Python: {@code OnFailure}).
 */
public enum OnFailure {
    /** Counts as failed: the join rule decides (the default rule, all_succeeded, then skips). The default. */
    SKIP(Taskring.OnFailure.ON_FAILURE_SKIP),
    /** Counts as done, as if it had succeeded without a result; recorded on the edge as "ignored". */
    IGNORE(Taskring.OnFailure.ON_FAILURE_IGNORE),
    /**
     * Its first failed attempt lets the task go at once, as done, without waiting for its retries;
     * recorded on the edge as "continued". A success before any failure counts as a success.
     */
    CONTINUE(Taskring.OnFailure.ON_FAILURE_CONTINUE);

    private final Taskring.OnFailure wire;

    OnFailure(Taskring.OnFailure wire) {
        this.wire = wire;
    }

    /** {@code "skip"}, {@code "ignore"} or {@code "continue"}, as every SDK and the CLI name it. */
    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }

    public Taskring.OnFailure toWire() {
        return wire;
    }

    /** The policy named {@code "skip"}, {@code "ignore"} or {@code "continue"}. */
    public static OnFailure parse(String name) {
        for (OnFailure p : values()) {
            if (p.wireName().equals(name)) {
                return p;
            }
        }
        throw new IllegalArgumentException("on_failure must be skip, ignore or continue, got '" + name + "'");
    }

    /** The server leaves UNSPECIFIED as it came, which means SKIP (as does a policy newer than this SDK). */
    static OnFailure fromWire(Taskring.OnFailure value) {
        for (OnFailure p : values()) {
            if (p.wire == value) {
                return p;
            }
        }
        return SKIP;
    }
}
