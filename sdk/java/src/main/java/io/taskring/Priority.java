package io.taskring;

import io.taskring.errors.InvalidTaskSpecException;
import java.util.Locale;
import taskring.v1.Taskring;

/** Priority class. Each class has its own Kafka topic, so LOW never queues ahead of HIGH. */
public enum Priority {
    LOW(Taskring.Priority.PRIORITY_LOW),
    NORMAL(Taskring.Priority.PRIORITY_NORMAL),
    HIGH(Taskring.Priority.PRIORITY_HIGH);

    private final Taskring.Priority wire;

    Priority(Taskring.Priority wire) {
        this.wire = wire;
    }

    public Taskring.Priority toWire() {
        return wire;
    }

    /** UNSPECIFIED (and anything unknown) reads as NORMAL, as the proto says. */
    public static Priority fromWire(int value) {
        for (Priority p : values()) {
            if (p.wire.getNumber() == value) {
                return p;
            }
        }
        return NORMAL;
    }

    /** {@code "low"}, {@code "normal"} or {@code "high"}, any case (as Python accepts). */
    public static Priority parse(String text) {
        if (text != null) {
            for (Priority p : values()) {
                if (p.name().equals(text.toUpperCase(Locale.ROOT))) {
                    return p;
                }
            }
        }
        throw new InvalidTaskSpecException("priority", "must be one of low, normal, high; got '" + text + "'");
    }
}
