package io.taskring;

import io.taskring.errors.InvalidTaskSpecException;
import java.math.BigInteger;
import java.time.Duration;

/** Durations go on the wire as whole milliseconds, rounded up: a delay must never make a task run early. */
public final class Durations {
    private static final BigInteger NANOS_PER_MS = BigInteger.valueOf(1_000_000);

    private Durations() {}

    /** Whole milliseconds of a non-negative duration, rounded up; may exceed a long for absurd inputs. */
    public static BigInteger ceilMillis(Duration d) {
        BigInteger nanos = BigInteger.valueOf(d.getSeconds()).multiply(BigInteger.valueOf(1_000_000_000L))
                .add(BigInteger.valueOf(d.getNano()));
        BigInteger[] qr = nanos.divideAndRemainder(NANOS_PER_MS);
        return qr[1].signum() > 0 ? qr[0].add(BigInteger.ONE) : qr[0];
    }

    /** Refuses null-safe negatives, naming the field like Python's {@code to_timedelta}. */
    public static Duration requireNonNegative(Duration d, String field) {
        if (d == null) {
            throw new InvalidTaskSpecException(field, "must not be null");
        }
        if (d.isNegative()) {
            throw new InvalidTaskSpecException(field, "must not be negative, got " + d);
        }
        return d;
    }
}
