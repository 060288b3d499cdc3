package io.taskring.client;

import java.util.Locale;
import taskring.v1.Taskring;

/** How {@link TaskringClient#cancelGraph} treats the graph's running tasks (Python: {@code CancelMode}). */
public enum CancelMode {
    /** Running tasks finish (a failed one is not retried); nothing new starts. The default. */
    GRACEFUL(Taskring.CancelMode.CANCEL_MODE_GRACEFUL),
    /**
     * Running tasks of types that heartbeat are told to stop at their next heartbeat too; the others
     * finish as under {@link #GRACEFUL}.
     */
    IMMEDIATE(Taskring.CancelMode.CANCEL_MODE_IMMEDIATE);

    private final Taskring.CancelMode wire;

    CancelMode(Taskring.CancelMode wire) {
        this.wire = wire;
    }

    /** {@code "graceful"} or {@code "immediate"}, as every SDK and the CLI name it. */
    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }

    public Taskring.CancelMode toWire() {
        return wire;
    }

    /** The mode named {@code "graceful"} or {@code "immediate"}. */
    public static CancelMode parse(String name) {
        for (CancelMode m : values()) {
            if (m.wireName().equals(name)) {
                return m;
            }
        }
        throw new IllegalArgumentException("mode must be graceful or immediate, got '" + name + "'");
    }
}
