package io.taskring.client;

import java.util.Objects;
import taskring.v1.Taskring;

/**
 * When a task of a graph becomes due, from the ends of the tasks it comes after (Python:
 * {@code Join}). Built with the factories; {@code atLeast} is 0 except for {@link JoinRule#AT_LEAST}.
 * Whether {@code k} fits the task's number of parents is the server's call (field
 * {@code tasks[i].join.at_least}).
 */
public record Join(JoinRule rule, int atLeast) {
    public Join {
        Objects.requireNonNull(rule, "rule");
        if (rule == JoinRule.AT_LEAST ? atLeast < 1 : atLeast != 0) {
            throw new IllegalArgumentException(rule == JoinRule.AT_LEAST
                    ? "at_least: must be a whole number >= 1, got " + atLeast
                    : "at_least: only for the rule at_least, not " + rule.wireName());
        }
    }

    /** Every parent succeeded (a failure under {@link OnFailure#IGNORE} counts as done). The default. */
    public static Join allSucceeded() {
        return new Join(JoinRule.ALL_SUCCEEDED, 0);
    }

    /** Every parent ended, whatever its end. */
    public static Join allDone() {
        return new Join(JoinRule.ALL_DONE, 0);
    }

    /** Every parent ended and none failed (a skipped parent is fine). */
    public static Join noneFailed() {
        return new Join(JoinRule.NONE_FAILED, 0);
    }

    /** One parent succeeded. */
    public static Join anySucceeded() {
        return new Join(JoinRule.ANY_SUCCEEDED, 0);
    }

    /** At least {@code k} parents succeeded. */
    public static Join atLeast(int k) {
        return new Join(JoinRule.AT_LEAST, k);
    }

    Taskring.Join toWire() {
        return Taskring.Join.newBuilder().setRule(rule.toWire()).setAtLeast(atLeast).build();
    }

    /** As the server stored it; never refused (a reader must not fail on what the server accepted). */
    static Join fromWire(Taskring.Join j) {
        JoinRule rule = JoinRule.fromWire(j.getRule());
        return new Join(rule, rule == JoinRule.AT_LEAST ? Math.max(1, j.getAtLeast()) : 0);
    }
}
