package io.taskring.client;

import java.util.Locale;
import taskring.v1.Taskring;

/** What the failure (dead letter) of a task means to one task that comes after it (Python: {@code OnFailure}). */
public enum OnFailure {
    /** Counts as failed: the join rule decides (the default rule, all_succeeded, then skips). The default. */
    SKIP(Taskring.OnFailure.ON_FAILURE_SKIP),
    /** Counts as done, as if it had succeeded without a result; recorded on the edge as "ignored". */
    IGNORE(Taskring.OnFailure.ON_FAILURE_IGNORE);

    private final Taskring.OnFailure wire;

    OnFailure(Taskring.OnFailure wire) {
        this.wire = wire;
    }

    /** {@code "skip"} or {@code "ignore"}, as every SDK and the CLI name it. */
    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }

    public Taskring.OnFailure toWire() {
        return wire;
    }

    /** The policy named {@code "skip"} or {@code "ignore"}. */
    public static OnFailure parse(String name) {
        for (OnFailure p : values()) {
            if (p.wireName().equals(name)) {
                return p;
            }
        }
        throw new IllegalArgumentException("on_failure must be skip or ignore, got '" + name + "'");
    }

    /** The server leaves UNSPECIFIED as it came, which means SKIP. */
    static OnFailure fromWire(Taskring.OnFailure value) {
        return value == Taskring.OnFailure.ON_FAILURE_IGNORE ? IGNORE : SKIP;
    }
}
