/**
 * Retry delays exactly as the dispatcher computes them (dispatcher/retry.py,
 * next_delay_ms and backoff_ceiling_ms), for callers that want to know when a
 * failed task runs again, and for the shared vectors (sdk/vectors/retry.json).
 *
 * Exponential: retry n (1-based) waits a uniform integer draw in
 * [0, ceiling], ceiling = min(max, trunc(initial * multiplier^(n-1))) in IEEE
 * double, clamped to max when that overflows. Tiered: schedule[min(n-1, len-1)],
 * no jitter. Plain numbers are exact here: every bound the server accepts is far
 * below 2^53 (its maximum delay is 90 days).
 */

/** A retry policy as the server resolved it: every field present. */
export interface ResolvedRetryPolicy {
  initialBackoffMs: number;
  maxBackoffMs: number;
  multiplier: number;
  scheduleMs?: readonly number[];
}

function checkRetry(n: number): void {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`retry: must be an integer >= 1, got ${n}`);
}

/** Upper bound of retry n's jittered wait (exponential policies); null for a tiered one. */
export function backoffCeilingMs(policy: ResolvedRetryPolicy, n: number): number | null {
  checkRetry(n);
  if (policy.scheduleMs !== undefined && policy.scheduleMs.length > 0) return null;
  const ceiling = policy.initialBackoffMs * Math.pow(policy.multiplier, n - 1);
  if (!Number.isFinite(ceiling) || ceiling >= policy.maxBackoffMs) return policy.maxBackoffMs;
  return Math.trunc(ceiling);
}

/**
 * How long retry n (1 = the first retry) waits after the failure. `jitter` is
 * the uniform draw u in [0, 1) (default Math.random()); the delay is
 * min(ceiling, floor(u * (ceiling + 1))), so the ceiling itself is reachable.
 * A tiered policy ignores it (and draws none).
 */
export function retryDelayMs(policy: ResolvedRetryPolicy, n: number, jitter?: number): number {
  checkRetry(n);
  const schedule = policy.scheduleMs;
  if (schedule !== undefined && schedule.length > 0) {
    return schedule[Math.min(n - 1, schedule.length - 1)] as number;
  }
  const ceiling = backoffCeilingMs(policy, n) as number;
  const u = jitter ?? Math.random(); // drawn only here: a tiered policy draws nothing
  return Math.min(ceiling, Math.floor(u * (ceiling + 1)));
}
