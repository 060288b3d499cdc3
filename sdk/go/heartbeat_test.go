package taskring

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	pb "github.com/taskring/taskring/sdk/go/pb/taskring/v1"
)

// fakeDispatcher plays the dispatcher's side of one Work stream to a real
// executor over loopback, collecting whatever comes up.
type fakeDispatcher struct {
	t      *testing.T
	stream pb.ExecutorService_WorkClient

	mu       sync.Mutex
	beats    []*pb.Heartbeat
	outcomes map[string]*pb.Outcome
}

func openWork(t *testing.T, stub pb.ExecutorServiceClient) *fakeDispatcher {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	stream, err := stub.Work(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeDispatcher{t: t, stream: stream, outcomes: map[string]*pb.Outcome{}}
	go func() {
		for {
			resp, err := stream.Recv()
			if err != nil {
				return
			}
			f.mu.Lock()
			f.beats = append(f.beats, resp.GetHeartbeats()...)
			for _, o := range resp.GetOutcomes() {
				f.outcomes[o.GetTaskId()] = o
			}
			f.mu.Unlock()
		}
	}()
	return f
}

func (f *fakeDispatcher) send(req *pb.ExecuteRequest) {
	f.t.Helper()
	req.DispatcherNode = "d1"
	if err := f.stream.Send(req); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fakeDispatcher) deliver(ds ...*pb.Delivery) { f.send(&pb.ExecuteRequest{Deliveries: ds}) }

// answer answers h as the dispatcher would.
func (f *fakeDispatcher) answer(h *pb.Heartbeat, verdict pb.HeartbeatVerdict, reason string) {
	f.send(&pb.ExecuteRequest{HeartbeatAnswers: []*pb.HeartbeatAnswer{{
		Sequence: h.GetSequence(), TaskId: h.GetTaskId(), Attempt: h.GetAttempt(), Verdict: verdict, Reason: reason,
	}}})
}

// heartbeats are those of taskID received so far, in order.
func (f *fakeDispatcher) heartbeats(taskID string) []*pb.Heartbeat {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*pb.Heartbeat
	for _, h := range f.beats {
		if h.GetTaskId() == taskID {
			out = append(out, h)
		}
	}
	return out
}

// awaitHeartbeats waits until n heartbeats of taskID came and returns them.
func (f *fakeDispatcher) awaitHeartbeats(taskID string, n int) []*pb.Heartbeat {
	f.t.Helper()
	waitFor(f.t, func() bool { return len(f.heartbeats(taskID)) >= n })
	return f.heartbeats(taskID)
}

func (f *fakeDispatcher) awaitOutcome(taskID string) *pb.Outcome {
	f.t.Helper()
	var o *pb.Outcome
	waitFor(f.t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		o = f.outcomes[taskID]
		return o != nil
	})
	return o
}

// barrier returns once the executor has read everything sent before it: the
// stream is read in order, so a quick task's outcome proves it.
func (f *fakeDispatcher) barrier(id string) {
	f.t.Helper()
	f.deliver(delivery(id, "quick", 1, 5000))
	f.awaitOutcome(id)
}

func hbDelivery(id, taskType string, attempt uint32) *pb.Delivery {
	d := delivery(id, taskType, attempt, 10_000)
	d.HeartbeatTimeoutMs = 30_000
	return d
}

func quick(context.Context, *Task) error { return nil }

// await receives from ch or fails after 5 s.
func await[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("nothing came in 5s")
		var zero T
		return zero
	}
}

func TestHeartbeatFirstOneIsSentAsTheHandlerStartsThenTheHandlersWithTheirDetails(t *testing.T) {
	release := make(chan struct{})
	errs := make(chan error, 2)
	timeouts := make(chan time.Duration, 1)
	_, stub := startExecutor(t, map[string]HandlerFunc{
		"export": func(ctx context.Context, task *Task) error {
			timeouts <- task.HeartbeatTimeout
			<-release
			errs <- task.Heartbeat(map[string]any{"page": 3, "note": "<ok>"})
			errs <- task.Heartbeat(nil)
			return nil
		},
	})
	f := openWork(t, stub)
	f.deliver(hbDelivery("e", "export", 2))

	first := f.awaitHeartbeats("e", 1)[0]
	if first.GetAttempt() != 2 || first.GetDetailsJson() != "" || first.GetSequence() == 0 {
		t.Errorf("the automatic first heartbeat: %v", first)
	}
	close(release)
	if o := f.awaitOutcome("e"); o.GetKind() != pb.OutcomeKind_OUTCOME_KIND_SUCCEEDED {
		t.Fatalf("outcome: %v %q", o.GetKind(), o.GetError())
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("Heartbeat: %v", err)
		}
	}
	// The outcome came after the heartbeats queued before it.
	hs := f.heartbeats("e")
	if len(hs) != 3 {
		t.Fatalf("%d heartbeats, want 3: %v", len(hs), hs)
	}
	if hs[1].GetDetailsJson() != `{"note":"<ok>","page":3}` || hs[2].GetDetailsJson() != "" {
		t.Errorf("details: %q then %q", hs[1].GetDetailsJson(), hs[2].GetDetailsJson())
	}
	if hs[0].GetSequence() == hs[1].GetSequence() || hs[1].GetSequence() == hs[2].GetSequence() || hs[0].GetSequence() == hs[2].GetSequence() {
		t.Errorf("sequences are not unique: %d %d %d", hs[0].GetSequence(), hs[1].GetSequence(), hs[2].GetSequence())
	}
	if d := <-timeouts; d != 30*time.Second {
		t.Errorf("HeartbeatTimeout %v, want 30s", d)
	}
}

func TestHeartbeatRefusesDetailsItCannotSend(t *testing.T) {
	errs := make(chan error, 3)
	_, stub := startExecutor(t, map[string]HandlerFunc{
		"export": func(ctx context.Context, task *Task) error {
			errs <- task.Heartbeat(strings.Repeat("x", maxDetailsBytes)) // 65,538 bytes with its quotes
			errs <- task.Heartbeat(make(chan int))
			errs <- task.Heartbeat(json.RawMessage("{not json"))
			return nil
		},
	})
	f := openWork(t, stub)
	f.deliver(hbDelivery("e", "export", 1))
	f.awaitOutcome("e")
	for i, want := range []string{"more than the 65536 allowed", "not encodable as JSON", "not valid JSON"} {
		err := <-errs
		var v *ValidationError
		if !errors.As(err, &v) || v.Field != "details" || !strings.Contains(v.Problem, want) {
			t.Errorf("call %d: got %v, want a ValidationError of details saying %q", i, err, want)
		}
	}
	if hs := f.heartbeats("e"); len(hs) != 1 {
		t.Errorf("%d heartbeats, want only the automatic one: %v", len(hs), hs)
	}
}

// A heartbeat's answer of CANCEL or LOST cancels the handler's ctx with the
// verdict as its cause, fails later heartbeats, and makes the outcome STOPPED
// whatever the handler returns.
func TestHeartbeatAnswerThatStopsTheAttempt(t *testing.T) {
	for _, tc := range []struct {
		verdict pb.HeartbeatVerdict
		is      error
		outcome string
	}{
		{pb.HeartbeatVerdict_HEARTBEAT_VERDICT_CANCEL, ErrTaskCancelled, "cancelled: cancelled by ops"},
		{pb.HeartbeatVerdict_HEARTBEAT_VERDICT_LOST, ErrAttemptLost, "lost: not the running attempt"},
	} {
		t.Run(tc.verdict.String(), func(t *testing.T) {
			causes, errs := make(chan error, 1), make(chan error, 1)
			var observed sync.Map
			_, stub := startExecutor(t, map[string]HandlerFunc{
				"export": func(ctx context.Context, task *Task) error {
					<-ctx.Done()
					causes <- context.Cause(ctx)
					errs <- task.Heartbeat(map[string]int{"page": 4})
					return nil // it even claims success
				},
			}, WithOutcomeObserver(func(o Outcome) { observed.Store(o.TaskID, o.Kind) }))
			f := openWork(t, stub)
			f.deliver(hbDelivery("e", "export", 1))
			f.answer(f.awaitHeartbeats("e", 1)[0], tc.verdict, strings.SplitN(tc.outcome, ": ", 2)[1])

			cause := await(t, causes)
			var stopped *TaskStoppedError
			if !errors.As(cause, &stopped) || !errors.Is(cause, tc.is) || !strings.Contains(cause.Error(), tc.outcome) {
				t.Errorf("ctx's cause: %v, want a TaskStoppedError matching %v", cause, tc.is)
			}
			if err := await(t, errs); !errors.Is(err, tc.is) {
				t.Errorf("Heartbeat after the stop: %v, want %v", err, tc.is)
			}
			o := f.awaitOutcome("e")
			if o.GetKind() != pb.OutcomeKind_OUTCOME_KIND_STOPPED || o.GetError() != tc.outcome {
				t.Errorf("outcome: %v %q, want STOPPED %q", o.GetKind(), o.GetError(), tc.outcome)
			}
			if k, _ := observed.Load("e"); k != OutcomeStopped {
				t.Errorf("observed kind %v", k)
			}
			if hs := f.heartbeats("e"); len(hs) != 1 {
				t.Errorf("%d heartbeats, want none after the stop: %v", len(hs), hs)
			}
		})
	}
}

// A handler that does not look at its ctx is answered for at once: the
// attempt is over for the dispatcher, while the goroutine keeps its slot.
func TestHeartbeatStopDoesNotWaitForAHandlerThatIgnoresItsContext(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	ex, stub := startExecutor(t, map[string]HandlerFunc{
		"deaf": func(context.Context, *Task) error { <-release; return nil },
	})
	f := openWork(t, stub)
	f.deliver(hbDelivery("d", "deaf", 1))
	f.answer(f.awaitHeartbeats("d", 1)[0], pb.HeartbeatVerdict_HEARTBEAT_VERDICT_CANCEL, "cancelled by ops")
	if o := f.awaitOutcome("d"); o.GetKind() != pb.OutcomeKind_OUTCOME_KIND_STOPPED {
		t.Errorf("outcome: %v %q", o.GetKind(), o.GetError())
	}
	if ex.InFlight() != 1 {
		t.Errorf("in flight %d, want the deaf handler's slot still held", ex.InFlight())
	}
}

func TestHeartbeatInvalidAnswerIsLoggedAndTheAttemptGoesOn(t *testing.T) {
	var logged syncBuffer
	proceed := make(chan struct{})
	results := make(chan error, 2)
	_, stub := startExecutor(t, map[string]HandlerFunc{
		"quick": quick,
		"export": func(ctx context.Context, task *Task) error {
			<-proceed
			results <- ctx.Err()
			results <- task.Heartbeat("page 5")
			return nil
		},
	}, WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	f := openWork(t, stub)
	f.deliver(hbDelivery("e", "export", 1))
	f.answer(f.awaitHeartbeats("e", 1)[0], pb.HeartbeatVerdict_HEARTBEAT_VERDICT_INVALID, "details: not JSON")
	f.barrier("b")
	close(proceed)
	if err := await(t, results); err != nil {
		t.Errorf("ctx after INVALID: %v", err)
	}
	if err := await(t, results); err != nil {
		t.Errorf("Heartbeat after INVALID: %v", err)
	}
	if o := f.awaitOutcome("e"); o.GetKind() != pb.OutcomeKind_OUTCOME_KIND_SUCCEEDED {
		t.Errorf("outcome: %v %q", o.GetKind(), o.GetError())
	}
	if hs := f.heartbeats("e"); len(hs) != 2 || hs[1].GetDetailsJson() != `"page 5"` {
		t.Errorf("heartbeats: %v", hs)
	}
	if s := logged.String(); !strings.Contains(s, "level=WARN") || !strings.Contains(s, "heartbeat refused") ||
		!strings.Contains(s, "details: not JSON") || !strings.Contains(s, "task_id=e") {
		t.Errorf("log: %s", s)
	}
}

func TestHeartbeatPreviousDetailsAreInTheTask(t *testing.T) {
	type progress struct{ Page int }
	got := make(chan string, 2)
	_, stub := startExecutor(t, map[string]HandlerFunc{
		"export": func(ctx context.Context, task *Task) error {
			var p progress
			found, err := task.DecodeLastHeartbeatDetails(&p)
			got <- task.TaskID + " " + task.LastHeartbeatDetails
			if err != nil || found != (task.LastHeartbeatDetails != "") || (found && p.Page != 7) {
				return NonRetryable(errors.New("decoded wrong"))
			}
			return nil
		},
	})
	f := openWork(t, stub)
	resumed := hbDelivery("resumed", "export", 2)
	resumed.HeartbeatDetailsJson = `{"Page":7}`
	f.deliver(resumed, hbDelivery("fresh", "export", 1))
	for _, id := range []string{"resumed", "fresh"} {
		if o := f.awaitOutcome(id); o.GetKind() != pb.OutcomeKind_OUTCOME_KIND_SUCCEEDED {
			t.Errorf("%s: %v %q", id, o.GetKind(), o.GetError())
		}
	}
	seen := map[string]bool{await(t, got): true, await(t, got): true}
	if !seen[`resumed {"Page":7}`] || !seen["fresh "] {
		t.Errorf("seen %v", seen)
	}
}

// Without a heartbeat timeout nothing goes up but the outcome, unless the
// handler heartbeats all the same: then its heartbeats are sent, and a CANCEL
// stops it too (its ctx is cancelled without a cause).
func TestHeartbeatWithoutTimeout(t *testing.T) {
	errs := make(chan error, 1)
	_, stub := startExecutor(t, map[string]HandlerFunc{
		"quick": quick,
		"chatty": func(ctx context.Context, task *Task) error {
			if err := task.Heartbeat(map[string]int{"page": 1}); err != nil {
				return err
			}
			<-ctx.Done()
			errs <- task.Heartbeat(nil)
			return ctx.Err()
		},
	})
	f := openWork(t, stub)
	f.deliver(delivery("q", "quick", 1, 5000))
	if o := f.awaitOutcome("q"); o.GetKind() != pb.OutcomeKind_OUTCOME_KIND_SUCCEEDED {
		t.Errorf("quick: %v", o.GetKind())
	}
	f.mu.Lock()
	if len(f.beats) != 0 { // a heartbeat queued before the outcome would have come before it
		t.Errorf("heartbeats for a delivery without a heartbeat timeout: %v", f.beats)
	}
	f.mu.Unlock()

	f.deliver(delivery("c", "chatty", 1, 10_000))
	h := f.awaitHeartbeats("c", 1)[0]
	if h.GetDetailsJson() != `{"page":1}` {
		t.Errorf("first heartbeat of c: %v", h)
	}
	f.answer(h, pb.HeartbeatVerdict_HEARTBEAT_VERDICT_CANCEL, "cancelled by ops")
	if err := await(t, errs); !errors.Is(err, ErrTaskCancelled) {
		t.Errorf("Heartbeat after the stop: %v", err)
	}
	if o := f.awaitOutcome("c"); o.GetKind() != pb.OutcomeKind_OUTCOME_KIND_STOPPED || o.GetError() != "cancelled: cancelled by ops" {
		t.Errorf("chatty: %v %q", o.GetKind(), o.GetError())
	}
}

// An answer for an attempt that is not running (finished, or another
// attempt of the task) changes nothing.
func TestHeartbeatAnswerForAnAttemptNotRunningIsIgnored(t *testing.T) {
	releaseDone, releaseRun := make(chan struct{}), make(chan struct{})
	_, stub := startExecutor(t, map[string]HandlerFunc{
		"quick": quick,
		"export": func(ctx context.Context, task *Task) error {
			if task.TaskID == "done" {
				<-releaseDone
			} else {
				<-releaseRun
			}
			return ctx.Err()
		},
	})
	f := openWork(t, stub)
	f.deliver(hbDelivery("done", "export", 1))
	first := f.awaitHeartbeats("done", 1)[0]
	close(releaseDone)
	f.awaitOutcome("done")
	f.answer(first, pb.HeartbeatVerdict_HEARTBEAT_VERDICT_CANCEL, "too late")

	f.deliver(hbDelivery("run", "export", 2))
	h := f.awaitHeartbeats("run", 1)[0]
	stale := &pb.Heartbeat{TaskId: h.GetTaskId(), Attempt: 1, Sequence: h.GetSequence()}
	f.answer(stale, pb.HeartbeatVerdict_HEARTBEAT_VERDICT_LOST, "attempt 1 was recovered")
	f.barrier("b") // both answers were read
	close(releaseRun)
	if o := f.awaitOutcome("run"); o.GetKind() != pb.OutcomeKind_OUTCOME_KIND_SUCCEEDED {
		t.Errorf("attempt 2: %v %q, want it untouched by an answer for attempt 1", o.GetKind(), o.GetError())
	}
}

// On an Execute call there is no stream: Heartbeat sends nothing and returns nil.
func TestHeartbeatOnAnExecuteCallSendsNothing(t *testing.T) {
	errs := make(chan error, 1)
	_, stub := startExecutor(t, map[string]HandlerFunc{
		"export": func(ctx context.Context, task *Task) error {
			errs <- task.Heartbeat(map[string]int{"page": 1})
			return nil
		},
	})
	resp, err := stub.Execute(context.Background(), &pb.ExecuteRequest{Deliveries: []*pb.Delivery{hbDelivery("e", "export", 1)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errs; err != nil {
		t.Errorf("Heartbeat: %v", err)
	}
	if len(resp.GetHeartbeats()) != 0 || resp.GetOutcomes()[0].GetKind() != pb.OutcomeKind_OUTCOME_KIND_SUCCEEDED {
		t.Errorf("response: %v", resp)
	}
}

// A Task made by hand (a handler's unit test) heartbeats into nothing.
func TestHeartbeatOnATaskMadeByHand(t *testing.T) {
	task := &Task{TaskID: "t", LastHeartbeatDetails: `[1,2]`}
	if err := task.Heartbeat(map[string]int{"page": 1}); err != nil {
		t.Errorf("Heartbeat: %v", err)
	}
	var got []int
	if found, err := task.DecodeLastHeartbeatDetails(&got); !found || err != nil || len(got) != 2 {
		t.Errorf("DecodeLastHeartbeatDetails: %v %v %v", found, err, got)
	}
}

func TestEncodeDetails(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
	}{
		{nil, ""},
		{json.RawMessage(nil), ""},
		{json.RawMessage(` {"a": [1, 2]} `), `{"a":[1,2]}`},
		{[]byte(`"s"`), `"s"`},
		{"a&b", `"a&b"`},
		{42, "42"},
		{strings.Repeat("x", maxDetailsBytes-2), `"` + strings.Repeat("x", maxDetailsBytes-2) + `"`},
	} {
		got, err := encodeDetails(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("encodeDetails(%v) = %.40q, %v; want %.40q", tc.in, got, err, tc.want)
		}
	}
}

// syncBuffer is a bytes.Buffer safe to log into from several goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
