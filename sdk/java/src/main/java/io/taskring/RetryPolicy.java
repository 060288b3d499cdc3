package io.taskring;

import io.taskring.errors.InvalidTaskSpecException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import taskring.v1.Taskring;

/**
 * How a failed attempt is retried; overrides the task type's and the server's policy.
 *
 * <p>Either exponential backoff with full jitter, or a tiered schedule where retry n
 * (counting from 1) waits {@code schedule[min(n-1, len-1)]}. Immutable.
 */
public final class RetryPolicy {
    private final Duration initialBackoff;
    private final Duration maxBackoff;
    private final double multiplier;
    private final List<Duration> schedule;

    private RetryPolicy(Duration initialBackoff, Duration maxBackoff, double multiplier, List<Duration> schedule) {
        this.initialBackoff = initialBackoff;
        this.maxBackoff = maxBackoff;
        this.multiplier = multiplier;
        this.schedule = schedule;
    }

    /** Exponential backoff: retry n waits a uniform draw in [0, min(max, initial * multiplier^(n-1))]. */
    public static RetryPolicy exponential(Duration initialBackoff, Duration maxBackoff, double multiplier) {
        Durations.requireNonNegative(initialBackoff, "retry_policy.initial_backoff");
        Durations.requireNonNegative(maxBackoff, "retry_policy.max_backoff");
        if (maxBackoff.compareTo(initialBackoff) < 0) {
            throw new InvalidTaskSpecException("retry_policy.max_backoff", "must be at least initial_backoff");
        }
        if (!Double.isFinite(multiplier) || multiplier < 1.0) {
            throw new InvalidTaskSpecException("retry_policy.multiplier", "must be >= 1.0, got " + multiplier);
        }
        return new RetryPolicy(initialBackoff, maxBackoff, multiplier, List.of());
    }

    /** A tiered schedule: 10 s, then 1 min, then every 10 min is {@code tiered(10s, 1m, 10m)}. */
    public static RetryPolicy tiered(Duration... waits) {
        return tiered(List.of(waits));
    }

    public static RetryPolicy tiered(List<Duration> waits) {
        if (waits.isEmpty()) {
            throw new InvalidTaskSpecException("retry_policy.schedule", "give at least one wait");
        }
        List<Duration> copy = new ArrayList<>(waits.size());
        for (int i = 0; i < waits.size(); i++) {
            copy.add(Durations.requireNonNegative(waits.get(i), "retry_policy.schedule[" + i + "]"));
        }
        // Python's defaults for the unused exponential fields; they do not go on the wire.
        return new RetryPolicy(Duration.ofSeconds(1), Duration.ofMinutes(5), 2.0, List.copyOf(copy));
    }

    public Duration initialBackoff() {
        return initialBackoff;
    }

    public Duration maxBackoff() {
        return maxBackoff;
    }

    public double multiplier() {
        return multiplier;
    }

    public List<Duration> schedule() {
        return schedule;
    }

    public boolean isTiered() {
        return !schedule.isEmpty();
    }

    /** As Python's {@code retry_policy_to_pb}: a tiered policy sends only its schedule. */
    public Taskring.RetryPolicy toWire() {
        Taskring.RetryPolicy.Builder b = Taskring.RetryPolicy.newBuilder();
        if (isTiered()) {
            for (int i = 0; i < schedule.size(); i++) {
                b.addScheduleMs(WireLimits.uint64Millis(schedule.get(i), "retry_policy.schedule[" + i + "]"));
            }
        } else {
            b.setInitialBackoffMs(WireLimits.uint64Millis(initialBackoff, "retry_policy.initial_backoff"));
            b.setMaxBackoffMs(WireLimits.uint64Millis(maxBackoff, "retry_policy.max_backoff"));
            b.setMultiplier(multiplier);
        }
        return b.build();
    }
}
