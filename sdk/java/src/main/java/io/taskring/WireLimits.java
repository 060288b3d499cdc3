package io.taskring;

import io.taskring.errors.InvalidTaskSpecException;
import java.math.BigInteger;
import java.time.Duration;

/** Range checks for what a proto field can carry (Java has no unsigned types to lean on). */
public final class WireLimits {
    public static final long UINT32_MAX = 0xFFFF_FFFFL;
    private static final BigInteger UINT64_MAX = BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE);

    private WireLimits() {}

    /** Milliseconds (rounded up) as the bit pattern of a proto uint64. */
    public static long uint64Millis(Duration d, String field) {
        BigInteger ms = Durations.ceilMillis(d);
        if (ms.compareTo(UINT64_MAX) > 0) {
            throw new InvalidTaskSpecException(field, "too large");
        }
        return ms.longValue(); // two's complement == the uint64 bits
    }
}
