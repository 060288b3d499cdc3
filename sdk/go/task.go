package taskring

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// Task is one attempt of one task, as its handler sees it (Python's TaskContext).
// (TaskID, Attempt, Epoch) identifies the delivery: delivery is at-least-once,
// so make the handler's effects idempotent on them.
type Task struct {
	TaskID         string
	Namespace      string
	TaskType       string
	Payload        json.RawMessage // the submitted JSON object ("{}" when none)
	PayloadVersion uint32
	Attempt        uint32 // 1 for the first run, 2 for the first retry, ...
	Epoch          uint64 // ownership epoch of the task's slot at dispatch (the fencing token)
	TraceID        string
	Deadline       time.Time // when this attempt times out; also the deadline of the handler's ctx
	CreatedAt      time.Time // when the task was accepted (zero if the server sent none)

	// HeartbeatTimeout is how long the attempt stays alive without a
	// heartbeat (0: none asked for). The SDK sends the first as the handler
	// starts; call Heartbeat at least this often after that.
	HeartbeatTimeout time.Duration
	// LastHeartbeatDetails is the JSON text of the details of the last
	// heartbeat an earlier attempt sent, to resume where it stopped; "" when
	// there are none. This attempt's own heartbeats do not change it.
	LastHeartbeatDetails string

	// Graphs (graph.go, result.go): set on a task of a graph, zero otherwise.
	GraphID  string // the graph the task is of
	GraphKey string // the task's key in it
	// KeepResult: some task of the graph depends on this one, so the result
	// given with SetResult is sent back and handed to it.
	KeepResult bool
	// ParentResults is how each task this one depends on ended, with its
	// result, in key order; ParentResult(key) finds one.
	ParentResults []ParentResult
	// ParentResultsTruncated: the parents' results came to more than 1 MiB
	// and those past it were left out of the delivery (their Truncated is set).
	ParentResultsTruncated bool

	// The result given with SetResult, read by the runner once the handler returned.
	resultMu sync.Mutex
	result   any

	// Heartbeat state (heartbeat.go). stream is nil on an Execute call;
	// cancelRun ends the handler's ctx; beat and ended are guarded by stream.mu.
	stream    *beatStream
	cancelRun context.CancelFunc
	beat      *beat
	ended     bool
}

// Decode unmarshals the payload into v.
func (t *Task) Decode(v any) error { return json.Unmarshal(t.Payload, v) }

// HandlerFunc runs one attempt. Return nil on success (with t.SetResult for
// a task of a graph whose result the tasks after it use), any error to retry
// after the task's backoff, NonRetryable(err) to dead-letter at once. ctx ends
// at t.Deadline, or earlier when the executor hands the work back on Stop or
// a heartbeat's answer stops the attempt (context.Cause is then a
// *TaskStoppedError): pass it to whatever the handler waits on.
type HandlerFunc func(ctx context.Context, t *Task) error

// OutcomeKind is what an attempt came to, as reported to the dispatcher.
type OutcomeKind string

const (
	OutcomeSucceeded    OutcomeKind = "succeeded"
	OutcomeRetryable    OutcomeKind = "retryable_failure"     // an error or a panic: retried after the backoff
	OutcomeNonRetryable OutcomeKind = "non_retryable_failure" // NonRetryable(err): dead-lettered now
	OutcomeTimedOut     OutcomeKind = "timed_out"             // the deadline passed: retried
	OutcomeNoHandler    OutcomeKind = "no_handler"            // retried, possibly on another executor
	OutcomeNotStarted   OutcomeKind = "not_started"           // never run: start_within_ms passed first; the attempt is not spent
	OutcomeStopped      OutcomeKind = "stopped"               // a heartbeat's answer said CANCEL or LOST
)

// Outcome is one attempt's result, given to the WithOutcomeObserver callback
// (for logs and metrics) as it is sent to the dispatcher.
type Outcome struct {
	TaskID     string
	TaskType   string
	Attempt    uint32
	Kind       OutcomeKind
	Error      string
	StackTrace string
	Started    time.Time // the zero time for OutcomeNotStarted: it never started
	Finished   time.Time
}
