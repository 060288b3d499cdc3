package taskring

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// ValidationError is a TaskSpec the client refuses before any call, for what
// the wire cannot carry (both a delay and a schedule time, a negative
// duration, an unknown priority, a payload that is not a JSON object). As in
// Python, everything else (name syntax, sizes, ranges) is judged by the
// server, so the rules live in one place; the server answers with an
// *InvalidArgumentError naming the field. Task.Heartbeat refuses details it
// cannot send with one too (Field "details").
type ValidationError struct {
	Field   string // "delay", "retry_policy.multiplier"; "tasks[2].delay" in a batch
	Problem string
}

func (e *ValidationError) Error() string { return "taskring: " + e.Field + ": " + e.Problem }

func invalid(field, format string, args ...any) *ValidationError {
	return &ValidationError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

const uint32Max = math.MaxUint32

// checkSpec mirrors TaskSpec.__post_init__ and RetryPolicy.__post_init__ of
// sdk/python/taskring/task.py, in the same order, with the same field names.
// Go has no naive time, so Python's "must be timezone-aware" has no twin.
func checkSpec(s *TaskSpec) *ValidationError {
	if s.Delay != 0 && !s.ScheduleTime.IsZero() {
		return invalid("delay", "give either delay or schedule_time, not both")
	}
	if s.Delay < 0 {
		return invalid("delay", "must not be negative, got %s", s.Delay)
	}
	if s.Timeout < 0 {
		return invalid("timeout", "must not be negative, got %s", s.Timeout)
	}
	if s.Timeout != 0 && toMillis(s.Timeout) > uint32Max {
		return invalid("timeout", "must be between 1 ms and %d ms", uint32(uint32Max))
	}
	if s.MaxRetries != nil && (*s.MaxRetries < math.MinInt32 || *s.MaxRetries > math.MaxInt32) {
		return invalid("max_retries", "out of the int32 range")
	}
	if _, ok := prioritiesToPB[Priority(strings.ToLower(string(s.Priority)))]; !ok {
		return invalid("priority", "must be one of low, normal, high; got %q", string(s.Priority))
	}
	if s.RetryPolicy != nil {
		if err := checkRetryPolicy(s.RetryPolicy); err != nil {
			return err
		}
	}
	return nil
}

func checkRetryPolicy(p *RetryPolicy) *ValidationError {
	initial, capped, mult := p.resolved()
	if initial < 0 {
		return invalid("retry_policy.initial_backoff", "must not be negative, got %s", initial)
	}
	if capped < 0 {
		return invalid("retry_policy.max_backoff", "must not be negative, got %s", capped)
	}
	if capped < initial {
		return invalid("retry_policy.max_backoff", "must be at least initial_backoff")
	}
	if math.IsNaN(mult) || math.IsInf(mult, 0) || mult < 1.0 {
		return invalid("retry_policy.multiplier", "must be >= 1.0, got %v", mult)
	}
	for i, w := range p.Schedule {
		if w < 0 {
			return invalid(fmt.Sprintf("retry_policy.schedule[%d]", i), "must not be negative, got %s", w)
		}
	}
	return nil
}

// resolved fills zero fields with Python's defaults.
func (p *RetryPolicy) resolved() (initial, capped time.Duration, mult float64) {
	initial, capped, mult = p.InitialBackoff, p.MaxBackoff, p.Multiplier
	if initial == 0 {
		initial = defaultInitialBackoff
	}
	if capped == 0 {
		capped = defaultMaxBackoff
	}
	if mult == 0 {
		mult = defaultMultiplier
	}
	return initial, capped, mult
}
