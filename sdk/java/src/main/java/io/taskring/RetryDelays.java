package io.taskring;

import taskring.v1.Taskring;

/**
 * How long retry {@code n} (1 = the first retry) waits, computed exactly as the
 * server does (dispatcher/retry.py), so a caller can predict the backoff.
 *
 * <p>Randomness comes in as {@code jitter}, a draw in [0, 1): the server draws a
 * uniform integer in [0, ceiling] ({@code random.randint}); {@code min(ceiling,
 * floor(jitter * (ceiling + 1)))} is the same distribution and makes the shared
 * vectors (sdk/vectors/retry.json) reproducible. A tiered policy ignores the jitter.
 */
public final class RetryDelays {
    private RetryDelays() {}

    public static long delayMs(Taskring.RetryPolicy policy, int n, double jitter) {
        if (n < 1) {
            throw new IllegalArgumentException("retry number must be >= 1, got " + n);
        }
        if (policy.getScheduleMsCount() > 0) {
            return policy.getScheduleMs(Math.min(n - 1, policy.getScheduleMsCount() - 1));
        }
        long ceiling = ceilingMs(policy, n);
        return Math.min(ceiling, (long) Math.floor(jitter * (ceiling + 1.0)));
    }

    /** The upper bound of retry n's jittered wait: min(max, initial * multiplier^(n-1)), truncated. */
    public static long ceilingMs(Taskring.RetryPolicy policy, int n) {
        double ceiling = policy.getInitialBackoffMs() * Math.pow(policy.getMultiplier(), n - 1);
        long max = policy.getMaxBackoffMs();
        if (!Double.isFinite(ceiling) || ceiling >= max) {
            return max;
        }
        return (long) ceiling;
    }
}
