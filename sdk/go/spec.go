package taskring

import (
	"encoding/json"
	"time"
)

// TaskSpec is one task to submit: the arguments of Python's Client.submit.
// Zero values mean "not given": the server fills in its defaults.
type TaskSpec struct {
	Namespace string // the owning service's namespace, [a-z0-9][a-z0-9._-]{0,63}
	TaskType  string // selects the handler, [A-Za-z0-9][A-Za-z0-9._:-]{0,127}

	// Payload is a JSON object: a map, a struct, or json.RawMessage / []byte
	// holding an object. nil sends {}. It travels as compact JSON text.
	Payload any

	// TaskID makes resubmission idempotent (a retry comes back with
	// Duplicate=true) and lets the client retry the call on another node.
	// Empty: the server assigns a UUIDv7.
	TaskID string

	Delay        time.Duration // run this long after acceptance; exclusive with ScheduleTime
	ScheduleTime time.Time     // run at this instant (sent with its own offset); exclusive with Delay
	Timeout      time.Duration // per-attempt deadline of the handler; 0: the server's default
	MaxRetries   *int          // retries after the first attempt; nil: the server's default (see Retries)
	RetryPolicy  *RetryPolicy  // nil: the task type's, else the server's
	Priority     Priority      // "" is normal; case-insensitive like Python's
	UniqueKey    string        // at most one live task per key (enforced by the server)
	TraceID      string        // carried to the handler, for joining logs across services

	PayloadVersion uint32 // schema version of the payload
}

// Retries is a helper for TaskSpec.MaxRetries: `MaxRetries: taskring.Retries(5)`.
func Retries(n int) *int { return &n }

// RetryPolicy is how a failed attempt is retried: exponential backoff with
// full jitter, or, when Schedule is not empty, a tiered schedule with no
// jitter. As in Python, a zero field takes Python's default (InitialBackoff 1s,
// MaxBackoff 5m, Multiplier 2.0), so the same policy puts the same bytes on
// the wire from either SDK.
type RetryPolicy struct {
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	Multiplier     float64
	Schedule       []time.Duration // when not empty, the three fields above are ignored
}

// Python's RetryPolicy defaults (sdk/python/taskring/task.py).
const (
	defaultInitialBackoff = time.Second
	defaultMaxBackoff     = 5 * time.Minute
	defaultMultiplier     = 2.0
)

// TieredRetry is a tiered schedule: retry n waits waits[min(n-1, len-1)].
func TieredRetry(waits ...time.Duration) *RetryPolicy {
	return &RetryPolicy{Schedule: waits}
}

// SubmitResult is the server's receipt for one submitted task.
type SubmitResult struct {
	TaskID    string
	Duplicate bool // this TaskID was already accepted; nothing new was written
	State     TaskState
	DueAt     time.Time // when the first attempt is due (UTC); zero if the server sent none
	Slot      uint32    // the slot (Kafka partition) the task lives in
}

// TaskEvent is one recorded transition of a task.
type TaskEvent struct {
	State   TaskState
	At      time.Time // UTC, millisecond precision
	Node    string    // the dispatcher node that recorded it
	Attempt uint32
	Detail  string // error text for failures, reason for cancels
}

// TaskInfo is a task as stored, with its state and history (Client.Get).
type TaskInfo struct {
	TaskID         string
	Namespace      string
	TaskType       string
	State          TaskState
	Attempts       uint32
	DueAt          time.Time
	Slot           uint32
	Payload        json.RawMessage // the JSON object as the server stores it (canonical: keys sorted)
	PayloadVersion uint32
	Priority       Priority
	LastError      string
	LastStackTrace string
	History        []TaskEvent // oldest first
	Waiting        string      // why a due task has not started: its owner holds it at a limit of its type ("" otherwise)
	CreatedAt      time.Time
	ScheduleTime   time.Time
	Timeout        time.Duration // 0 when the server sent none
	MaxRetries     *int
	UniqueKey      string
	TraceID        string
}

// Decode unmarshals the stored payload into v.
func (i *TaskInfo) Decode(v any) error { return json.Unmarshal(i.Payload, v) }
