package io.taskring.client;

import java.util.Locale;
import taskring.v1.Taskring;

/** When a task of a graph becomes due, from how the tasks it comes after ended ({@link Join}). */
public enum JoinRule {
    /** Every parent succeeded (a failure under {@link OnFailure#IGNORE} counts as done). The default. */
    ALL_SUCCEEDED(Taskring.JoinRule.JOIN_RULE_ALL_SUCCEEDED),
    /** Every parent ended, whatever its end. */
    ALL_DONE(Taskring.JoinRule.JOIN_RULE_ALL_DONE),
    /** Every parent ended and none failed (a skipped parent is fine). */
    NONE_FAILED(Taskring.JoinRule.JOIN_RULE_NONE_FAILED),
    /** One parent succeeded. */
    ANY_SUCCEEDED(Taskring.JoinRule.JOIN_RULE_ANY_SUCCEEDED),
    /** {@link Join#atLeast()} parents succeeded. */
    AT_LEAST(Taskring.JoinRule.JOIN_RULE_AT_LEAST);

    private final Taskring.JoinRule wire;

    JoinRule(Taskring.JoinRule wire) {
        this.wire = wire;
    }

    /** {@code "all_succeeded"}, ..., as every SDK and the CLI name it. */
    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }

    public Taskring.JoinRule toWire() {
        return wire;
    }

    /** The rule named {@code "all_succeeded"}, {@code "all_done"}, {@code "none_failed"}, ... */
    public static JoinRule parse(String name) {
        for (JoinRule r : values()) {
            if (r.wireName().equals(name)) {
                return r;
            }
        }
        throw new IllegalArgumentException(
                "join rule must be all_succeeded, all_done, none_failed, any_succeeded or at_least, got '" + name + "'");
    }

    /** UNSPECIFIED (and a rule newer than this SDK) read as the server applies it: ALL_SUCCEEDED. */
    static JoinRule fromWire(Taskring.JoinRule value) {
        for (JoinRule r : values()) {
            if (r.wire == value) {
                return r;
            }
        }
        return ALL_SUCCEEDED;
    }
}
