package taskring

// What a handler's error means for retries, as in Python's RetryableError /
// NonRetryableError: any error is retryable (an unexpected error is more often
// transient than permanent, and a dead letter is the more expensive mistake),
// unless it is wrapped with NonRetryable.

// NonRetryableError marks a handler failure that can never succeed as
// submitted: the task is dead-lettered at once, without retries.
type NonRetryableError struct{ Err error }

// NonRetryable wraps err so the executor reports OUTCOME_KIND_NON_RETRYABLE_FAILURE.
// A nil err stays nil, so `return taskring.NonRetryable(err)` is safe.
func NonRetryable(err error) error {
	if err == nil {
		return nil
	}
	return &NonRetryableError{Err: err}
}

func (e *NonRetryableError) Error() string { return e.Err.Error() }
func (e *NonRetryableError) Unwrap() error { return e.Err }
