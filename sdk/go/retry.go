package taskring

import (
	"math"
	"time"
)

// RetryDelay is how long retry n (1 = the first retry) of a task with policy p
// waits after a failure, exactly as the dispatcher computes it
// (dispatcher/retry.py next_delay_ms; sdk/vectors/retry.json). It is here so a
// service can predict or display its tasks' schedule; the server decides.
//
// Tiered (Schedule not empty): Schedule[min(n-1, len-1)], jitter ignored.
// Exponential: a full-jitter draw from 0..ceiling inclusive, where jitter in
// [0, 1) stands for the server's random draw: min(ceiling, floor(jitter*(ceiling+1))).
// Zero fields take Python's defaults, as on the wire. n < 1 counts as 1.
func RetryDelay(p RetryPolicy, n int, jitter float64) time.Duration {
	if n < 1 {
		n = 1
	}
	if len(p.Schedule) > 0 {
		return msDuration(toMillis(p.Schedule[min(n-1, len(p.Schedule)-1)]))
	}
	ceiling := retryCeilingMs(p, n)
	draw := math.Floor(jitter * (float64(ceiling) + 1))
	if draw < 0 || math.IsNaN(draw) {
		draw = 0
	}
	if draw >= float64(ceiling) {
		return msDuration(ceiling)
	}
	return msDuration(uint64(draw))
}

// RetryCeiling is the upper bound of retry n's jittered wait for an exponential
// policy; ok is false for a tiered one, which has no jitter.
func RetryCeiling(p RetryPolicy, n int) (ceiling time.Duration, ok bool) {
	if len(p.Schedule) > 0 {
		return 0, false
	}
	if n < 1 {
		n = 1
	}
	return msDuration(retryCeilingMs(p, n)), true
}

// retryCeilingMs is backoff_ceiling_ms: initial * multiplier^(n-1) in IEEE
// double, truncated, or the cap when that reaches it or stops being finite.
func retryCeilingMs(p RetryPolicy, n int) uint64 {
	initial, capped, mult := p.resolved()
	initialMs, capMs := toMillis(initial), toMillis(capped)
	c := float64(initialMs) * math.Pow(mult, float64(n-1))
	if math.IsNaN(c) || math.IsInf(c, 0) || c >= float64(capMs) {
		return capMs
	}
	return uint64(c)
}

func msDuration(ms uint64) time.Duration { return time.Duration(ms) * time.Millisecond }
