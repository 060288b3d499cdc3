package taskring

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"time"

	pb "github.com/taskring/taskring/sdk/go/pb/taskring/v1"
)

// The executor's hot path: one delivery to one outcome, as
// sdk/python/taskring/_runner.py.
//
//   - The deadline counts from when the executor received the batch
//     (received + timeout_ms): the dispatcher's RPC deadline is the task timeout,
//     so counting from receipt keeps the outcome inside the time it still
//     listens. A delivery that waits for a free slot past its deadline is
//     reported TIMED_OUT without running.
//   - A delivery with start_within_ms set that got its slot later than that
//     after receipt is not run at all: the slot is given back and the answer
//     is NOT_STARTED (started_at_ms 0), which the dispatcher does not count
//     as a spent attempt. Its lease may have a new owner by then. The same
//     holds for one with start_by_unix_ms set that gets its slot at or after
//     that instant (a batch held up on its way); whichever comes first wins.
//   - max_in_flight is one semaphore shared by all Execute calls; a slot is
//     held for as long as the handler really runs. A handler that ignores its
//     ctx and overruns is reported TIMED_OUT at the deadline, but a goroutine
//     cannot be killed: it keeps its slot until it returns, so hung handlers
//     visibly reduce capacity instead of piling up without bound (as Python's
//     sync handlers on threads).
//   - On Stop past its grace, `abort` ends: every delivery not finished is
//     answered RETRYABLE ("handed back") so the dispatcher re-queues it at
//     once, instead of the call failing and the tasks waiting for a timeout.
//   - On a Work stream, an attempt that a heartbeat's answer stopped (CANCEL
//     or LOST, heartbeat.go) is answered STOPPED at once, whatever its handler
//     returns; one that ignores its cancelled ctx keeps its slot, as above.

// fallbackTimeout applies when neither the delivery nor the task carries one (a dispatcher always should).
const fallbackTimeout = 300 * time.Second

// maxTraceChars: stack traces are stored with the task's history; keep the innermost frames of long ones.
const maxTraceChars = 16384

const handedBack = "executor is stopping: handed back for another attempt"

type runner struct {
	namespace string
	handlers  map[string]HandlerFunc
	slots     chan struct{} // one token per running handler
	abort     context.Context
	observe   func(Outcome)
	log       *slog.Logger
	inFlight  atomic.Int64
	waiting   atomic.Int64
}

// handlerResult is what the handler's goroutine reports.
type handlerResult struct {
	err      error
	panicked bool
	value    any
	stack    []byte
	finished time.Time
}

// run answers one delivery; beats is its Work stream's, nil on an Execute call.
func (r *runner) run(ctx context.Context, d *pb.Delivery, received time.Time, beats *beatStream) *pb.Outcome {
	o := r.outcome(ctx, d, received, beats)
	if r.observe != nil {
		r.observe(Outcome{
			TaskID: o.GetTaskId(), TaskType: d.GetTask().GetTaskType(), Attempt: o.GetAttempt(),
			Kind: kindName(o.GetKind()), Error: o.GetError(), StackTrace: o.GetStackTrace(),
			Started: startedAt(o.GetStartedAtMs()), Finished: time.UnixMilli(o.GetFinishedAtMs()),
		})
	}
	return o
}

func (r *runner) outcome(ctx context.Context, d *pb.Delivery, received time.Time, beats *beatStream) *pb.Outcome {
	task := d.GetTask()
	now := time.Now()
	quick := func(kind pb.OutcomeKind, msg string) *pb.Outcome {
		return &pb.Outcome{TaskId: task.GetTaskId(), Attempt: d.GetAttempt(), Kind: kind, Error: msg,
			StartedAtMs: now.UnixMilli(), FinishedAtMs: time.Now().UnixMilli()}
	}
	handler, ok := r.handlers[task.GetTaskType()]
	if !ok || task.GetNamespace() != r.namespace {
		// Python looks at the task type only; a foreign namespace is a routing
		// mistake this executor must not run, and NO_HANDLER lets it go elsewhere.
		return quick(pb.OutcomeKind_OUTCOME_KIND_NO_HANDLER,
			fmt.Sprintf("no handler for task type %q of namespace %q in this executor", task.GetTaskType(), task.GetNamespace()))
	}
	timeout := time.Duration(d.GetTimeoutMs()) * time.Millisecond
	if timeout == 0 && task.TimeoutMs != nil {
		timeout = time.Duration(task.GetTimeoutMs()) * time.Millisecond
	}
	if timeout == 0 {
		timeout = fallbackTimeout
	}
	deadline := received.Add(timeout)
	payload, err := decodePayloadText(task.GetPayloadJson())
	if err != nil { // a payload the server should never have accepted: no attempt can succeed
		return quick(pb.OutcomeKind_OUTCOME_KIND_NON_RETRYABLE_FAILURE, "payload_json: "+err.Error())
	}
	parents, err := parentResultsFromPB(d)
	if err != nil { // the server stores only JSON results: a delivery that says otherwise cannot run as meant
		return quick(pb.OutcomeKind_OUTCOME_KIND_NON_RETRYABLE_FAILURE, err.Error())
	}
	switch r.acquire(ctx, deadline) {
	case acquiredTimedOut:
		return quick(pb.OutcomeKind_OUTCOME_KIND_TIMED_OUT, fmt.Sprintf(
			"deadline of %d ms passed while waiting for a free slot (max_in_flight is reached)", timeout.Milliseconds()))
	case acquiredAborted:
		return quick(pb.OutcomeKind_OUTCOME_KIND_RETRYABLE_FAILURE, handedBack)
	}
	if late := tooLateToStart(d, received); late != "" {
		// Past what the dispatcher's lease allowed: its slot may have a new
		// owner by now, which runs the attempt itself. Not run, not spent.
		r.release()
		return &pb.Outcome{TaskId: task.GetTaskId(), Attempt: d.GetAttempt(), Kind: pb.OutcomeKind_OUTCOME_KIND_NOT_STARTED,
			Error: late, StartedAtMs: 0, FinishedAtMs: time.Now().UnixMilli()}
	}
	createdAt, _ := parseInstant(task.GetCreatedAt()) // informational only; never fail a task over it
	t := &Task{
		TaskID: task.GetTaskId(), Namespace: task.GetNamespace(), TaskType: task.GetTaskType(),
		Payload: payload, PayloadVersion: task.GetPayloadVersion(), Attempt: d.GetAttempt(), Epoch: d.GetEpoch(),
		TraceID: task.GetTraceId(), Deadline: deadline, CreatedAt: createdAt,
		HeartbeatTimeout:     time.Duration(d.GetHeartbeatTimeoutMs()) * time.Millisecond,
		LastHeartbeatDetails: d.GetHeartbeatDetailsJson(), stream: beats,
		GraphID: task.GetGraph().GetGraphId(), GraphKey: task.GetGraph().GetKey(),
		KeepResult: d.GetKeepResult(), ParentResults: parents, ParentResultsTruncated: d.GetParentResultsTruncated(),
	}
	return r.runHandler(ctx, handler, t, timeout)
}

// tooLateToStart says why the delivery must not start now ("" when it may): the
// end of the dispatcher's lease, as time since arrival (start_within_ms) or as an
// instant (start_by_unix_ms), as _too_late_to_start in Python.
func tooLateToStart(d *pb.Delivery, received time.Time) string {
	if sw := d.GetStartWithinMs(); sw != 0 && time.Since(received) > time.Duration(sw)*time.Millisecond {
		return fmt.Sprintf("not started within %d ms of arrival (max_in_flight is reached)", sw)
	}
	if by := d.GetStartByUnixMs(); by != 0 && time.Now().UnixMilli() >= by {
		return fmt.Sprintf("not started by %d (unix ms): the dispatcher's lease had run out when it arrived", by)
	}
	return ""
}

type acquired int

const (
	acquiredOK acquired = iota
	acquiredTimedOut
	acquiredAborted
)

func (r *runner) acquire(ctx context.Context, deadline time.Time) acquired {
	select {
	case r.slots <- struct{}{}:
		r.inFlight.Add(1)
		return acquiredOK
	default:
	}
	r.waiting.Add(1)
	defer r.waiting.Add(-1)
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case r.slots <- struct{}{}:
		r.inFlight.Add(1)
		return acquiredOK
	case <-timer.C:
		return acquiredTimedOut
	case <-r.abort.Done():
		return acquiredAborted
	case <-ctx.Done(): // the dispatcher gave up on the call; nobody will read this outcome
		return acquiredAborted
	}
}

func (r *runner) release() {
	r.inFlight.Add(-1)
	<-r.slots
}

func (r *runner) runHandler(ctx context.Context, h HandlerFunc, t *Task, timeout time.Duration) *pb.Outcome {
	parent := ctx
	var stop context.CancelCauseFunc
	if t.stream != nil && t.HeartbeatTimeout > 0 {
		// Only an attempt that heartbeats pays for a ctx that can carry why an
		// answer stopped it.
		parent, stop = context.WithCancelCause(ctx)
		defer stop(nil)
	}
	hctx, cancel := context.WithDeadline(parent, t.Deadline)
	defer cancel()
	unlink := context.AfterFunc(r.abort, cancel) // Stop past its grace cancels handlers too
	defer unlink()
	t.cancelRun = cancel

	started := time.Now()
	if stop != nil {
		t.stream.begin(t, stop)
	}
	done := make(chan handlerResult, 1)
	go func() {
		defer r.release() // only when the handler really returns
		defer func() {
			if v := recover(); v != nil {
				// A panic is a failed attempt, never a dead process.
				done <- handlerResult{panicked: true, value: v, stack: debug.Stack(), finished: time.Now()}
			}
		}()
		err := callHandler(hctx, h, t) // in a span when the task carries a traceparent (tracing.go)
		done <- handlerResult{err: err, finished: time.Now()}
	}()

	o := &pb.Outcome{TaskId: t.TaskID, Attempt: t.Attempt, StartedAtMs: started.UnixMilli()}
	var res handlerResult
	select {
	case res = <-done:
	case <-hctx.Done():
		select {
		case res = <-done: // it returned just as its context ended: take its own word
		default:
			o.FinishedAtMs = time.Now().UnixMilli()
			if stopped := t.endBeats(); stopped != nil {
				// The attempt is over for the dispatcher; like a timed-out one,
				// the goroutine keeps its slot until it returns.
				o.Kind, o.Error = pb.OutcomeKind_OUTCOME_KIND_STOPPED, stopped.outcomeText()
			} else if r.abort.Err() != nil || ctx.Err() != nil {
				o.Kind, o.Error = pb.OutcomeKind_OUTCOME_KIND_RETRYABLE_FAILURE, handedBack
			} else {
				r.log.Warn("taskring: handler exceeded its timeout; its goroutine keeps its slot until it returns",
					"task_id", t.TaskID, "task_type", t.TaskType, "timeout", timeout)
				o.Kind = pb.OutcomeKind_OUTCOME_KIND_TIMED_OUT
				o.Error = fmt.Sprintf("handler exceeded its timeout of %d ms (it was not stopped: a goroutine runs on until it returns)", timeout.Milliseconds())
			}
			return o
		}
	}
	o.FinishedAtMs = res.finished.UnixMilli()
	stopped := t.endBeats()
	switch {
	case stopped != nil: // whatever the handler made of its cancelled ctx
		o.Kind, o.Error = pb.OutcomeKind_OUTCOME_KIND_STOPPED, stopped.outcomeText()
	case res.panicked:
		o.Kind = pb.OutcomeKind_OUTCOME_KIND_RETRYABLE_FAILURE
		o.Error = fmt.Sprintf("panic: %v", res.value)
		o.StackTrace = trimTrace(string(res.stack))
	case res.err == nil:
		// A result that cannot be kept fails the attempt for good: it would give the same again.
		if text, problem := t.keptResult(); problem != "" {
			o.Kind, o.Error = pb.OutcomeKind_OUTCOME_KIND_NON_RETRYABLE_FAILURE, problem
		} else {
			o.Kind, o.ResultJson = pb.OutcomeKind_OUTCOME_KIND_SUCCEEDED, text
		}
	case errors.As(res.err, new(*NonRetryableError)):
		o.Kind, o.Error = pb.OutcomeKind_OUTCOME_KIND_NON_RETRYABLE_FAILURE, res.err.Error()
	case errors.Is(res.err, context.DeadlineExceeded) && errors.Is(hctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		// The handler gave up because its own deadline passed: that is a timeout, not a bug.
		o.Kind = pb.OutcomeKind_OUTCOME_KIND_TIMED_OUT
		o.Error = fmt.Sprintf("handler exceeded its timeout of %d ms: %v", timeout.Milliseconds(), res.err)
	case r.abort.Err() != nil:
		o.Kind, o.Error = pb.OutcomeKind_OUTCOME_KIND_RETRYABLE_FAILURE, handedBack+": "+res.err.Error()
	default:
		o.Kind, o.Error = pb.OutcomeKind_OUTCOME_KIND_RETRYABLE_FAILURE, res.err.Error()
	}
	return o
}

// startedAt is the zero time for an attempt that never started (started_at_ms 0).
func startedAt(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

func trimTrace(s string) string {
	if len(s) <= maxTraceChars {
		return s
	}
	return "...(truncated)\n" + s[len(s)-maxTraceChars:]
}

func kindName(k pb.OutcomeKind) OutcomeKind {
	switch k {
	case pb.OutcomeKind_OUTCOME_KIND_SUCCEEDED:
		return OutcomeSucceeded
	case pb.OutcomeKind_OUTCOME_KIND_RETRYABLE_FAILURE:
		return OutcomeRetryable
	case pb.OutcomeKind_OUTCOME_KIND_NON_RETRYABLE_FAILURE:
		return OutcomeNonRetryable
	case pb.OutcomeKind_OUTCOME_KIND_TIMED_OUT:
		return OutcomeTimedOut
	case pb.OutcomeKind_OUTCOME_KIND_NO_HANDLER:
		return OutcomeNoHandler
	case pb.OutcomeKind_OUTCOME_KIND_NOT_STARTED:
		return OutcomeNotStarted
	case pb.OutcomeKind_OUTCOME_KIND_STOPPED:
		return OutcomeStopped
	}
	return OutcomeKind(k.String())
}
