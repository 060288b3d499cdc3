package taskring

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "github.com/taskring/taskring/sdk/go/pb/taskring/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// startExecutor runs an executor (no ZooKeeper) on a loopback port and
// returns it with a stub that plays the dispatcher.
func startExecutor(t *testing.T, handlers map[string]HandlerFunc, opts ...ExecutorOption) (*Executor, pb.ExecutorServiceClient) {
	t.Helper()
	ex, err := NewExecutor("shop", append([]ExecutorOption{WithLogger(quiet)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	for tt, h := range handlers {
		if err := ex.Handle(tt, h); err != nil {
			t.Fatal(err)
		}
	}
	if err := ex.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ex.Stop(context.Background()) })
	cc, err := grpc.NewClient(ex.Address(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return ex, pb.NewExecutorServiceClient(cc)
}

func delivery(id, taskType string, attempt uint32, timeoutMs uint32) *pb.Delivery {
	return &pb.Delivery{
		Task:    &pb.Task{TaskId: id, Namespace: "shop", TaskType: taskType, PayloadJson: `{"order":42}`, TraceId: "tr"},
		Attempt: attempt, Epoch: 9, TimeoutMs: timeoutMs,
	}
}

func execute(t *testing.T, stub pb.ExecutorServiceClient, ds ...*pb.Delivery) map[string]*pb.Outcome {
	t.Helper()
	resp, err := stub.Execute(context.Background(), &pb.ExecuteRequest{Deliveries: ds, DispatcherNode: "d1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetOutcomes()) != len(ds) {
		t.Fatalf("%d outcomes for %d deliveries", len(resp.GetOutcomes()), len(ds))
	}
	out := map[string]*pb.Outcome{}
	for _, o := range resp.GetOutcomes() {
		out[o.GetTaskId()] = o
	}
	return out
}

func TestExecutorOutcomes(t *testing.T) {
	var seen atomic.Pointer[Task]
	_, stub := startExecutor(t, map[string]HandlerFunc{
		"ok": func(ctx context.Context, task *Task) error {
			var p struct{ Order int }
			if err := task.Decode(&p); err != nil || p.Order != 42 {
				return errors.New("bad payload")
			}
			if dl, ok := ctx.Deadline(); !ok || !dl.Equal(task.Deadline) {
				return errors.New("ctx has not the task's deadline")
			}
			seen.Store(task)
			return nil
		},
		"fail":     func(context.Context, *Task) error { return errors.New("upstream down") },
		"fatal":    func(context.Context, *Task) error { return NonRetryable(errors.New("no such order")) },
		"panic":    func(context.Context, *Task) error { panic("kaboom") },
		"nilpanic": func(context.Context, *Task) error { var m map[string]int; m["x"] = 1; return nil },
	})
	bad := delivery("bad", "ok", 1, 1000)
	bad.Task.PayloadJson = "[1]"
	foreign := delivery("foreign", "ok", 1, 1000)
	foreign.Task.Namespace = "other"
	out := execute(t, stub,
		delivery("1", "ok", 3, 5000), delivery("2", "fail", 1, 1000), delivery("3", "fatal", 1, 1000),
		delivery("4", "panic", 1, 1000), delivery("5", "nilpanic", 1, 1000), delivery("6", "unknown", 2, 1000), bad, foreign)
	want := map[string]pb.OutcomeKind{
		"1": pb.OutcomeKind_OUTCOME_KIND_SUCCEEDED, "2": pb.OutcomeKind_OUTCOME_KIND_RETRYABLE_FAILURE,
		"3": pb.OutcomeKind_OUTCOME_KIND_NON_RETRYABLE_FAILURE, "4": pb.OutcomeKind_OUTCOME_KIND_RETRYABLE_FAILURE,
		"5": pb.OutcomeKind_OUTCOME_KIND_RETRYABLE_FAILURE, "6": pb.OutcomeKind_OUTCOME_KIND_NO_HANDLER,
		"bad": pb.OutcomeKind_OUTCOME_KIND_NON_RETRYABLE_FAILURE, "foreign": pb.OutcomeKind_OUTCOME_KIND_NO_HANDLER,
	}
	for id, k := range want {
		if out[id].GetKind() != k {
			t.Errorf("%s: got %v (%q), want %v", id, out[id].GetKind(), out[id].GetError(), k)
		}
	}
	if out["2"].GetError() != "upstream down" || out["3"].GetError() != "no such order" {
		t.Errorf("error texts: %q %q", out["2"].GetError(), out["3"].GetError())
	}
	if out["4"].GetError() != "panic: kaboom" || !strings.Contains(out["4"].GetStackTrace(), "executor_test.go") {
		t.Errorf("panic outcome: %q\n%s", out["4"].GetError(), out["4"].GetStackTrace())
	}
	if out["6"].GetAttempt() != 2 || out["1"].GetStartedAtMs() == 0 || out["1"].GetFinishedAtMs() < out["1"].GetStartedAtMs() {
		t.Errorf("outcome fields: %v %v", out["6"], out["1"])
	}
	task := seen.Load()
	if task == nil || task.TaskID != "1" || task.Attempt != 3 || task.Epoch != 9 || task.TraceID != "tr" || task.Namespace != "shop" {
		t.Errorf("task seen by the handler: %+v", task)
	}
}

func TestExecutorDeadlines(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	_, stub := startExecutor(t, map[string]HandlerFunc{
		"honours": func(ctx context.Context, _ *Task) error { <-ctx.Done(); return ctx.Err() },
		"ignores": func(context.Context, *Task) error { <-release; return nil },
	})
	start := time.Now()
	out := execute(t, stub, delivery("h", "honours", 1, 100), delivery("i", "ignores", 1, 150))
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("the batch took %v; deadlines are 100 and 150 ms", el)
	}
	for _, id := range []string{"h", "i"} {
		if out[id].GetKind() != pb.OutcomeKind_OUTCOME_KIND_TIMED_OUT {
			t.Errorf("%s: got %v (%q), want TIMED_OUT", id, out[id].GetKind(), out[id].GetError())
		}
	}
}

func TestExecutorMaxInFlight(t *testing.T) {
	var running, peak atomic.Int32
	block := make(chan struct{})
	ex, stub := startExecutor(t, map[string]HandlerFunc{
		"work": func(ctx context.Context, _ *Task) error {
			n := running.Add(1)
			defer running.Add(-1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			select {
			case <-block:
			case <-time.After(50 * time.Millisecond):
			}
			return nil
		},
		"hold": func(ctx context.Context, _ *Task) error { <-block; return nil },
	}, WithMaxInFlight(2))
	var ds []*pb.Delivery
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		ds = append(ds, delivery(id, "work", 1, 5000))
	}
	for id, o := range execute(t, stub, ds...) {
		if o.GetKind() != pb.OutcomeKind_OUTCOME_KIND_SUCCEEDED {
			t.Errorf("%s: %v", id, o.GetKind())
		}
	}
	if peak.Load() != 2 {
		t.Errorf("peak concurrency %d, want 2", peak.Load())
	}
	// Both slots held: a delivery whose deadline passes while it waits times out without running.
	done := make(chan map[string]*pb.Outcome)
	go func() { done <- execute(t, stub, delivery("h1", "hold", 1, 5000), delivery("h2", "hold", 1, 5000)) }()
	waitFor(t, func() bool { return ex.InFlight() == 2 })
	out := execute(t, stub, delivery("late", "work", 1, 100))
	if out["late"].GetKind() != pb.OutcomeKind_OUTCOME_KIND_TIMED_OUT || !strings.Contains(out["late"].GetError(), "max_in_flight") {
		t.Errorf("late: %v %q", out["late"].GetKind(), out["late"].GetError())
	}
	close(block)
	<-done
}

func TestExecutorDeliveryThatCannotStartWithinStartWithinMsIsNotRun(t *testing.T) {
	var mu sync.Mutex
	var ran []string
	busy := make(chan struct{})
	release := make(chan struct{})
	_, stub := startExecutor(t, map[string]HandlerFunc{
		"hold": func(context.Context, *Task) error {
			close(busy)
			select {
			case <-release:
			case <-time.After(5 * time.Second):
			}
			return nil
		},
		"ok": func(_ context.Context, task *Task) error {
			mu.Lock()
			ran = append(ran, task.TaskID)
			mu.Unlock()
			return nil
		},
	}, WithMaxInFlight(1))
	// Given the only slot busy until `release` is closed
	held := make(chan map[string]*pb.Outcome, 1)
	go func() { held <- execute(t, stub, delivery("h", "hold", 1, 10_000)) }()
	select {
	case <-busy:
	case <-time.After(5 * time.Second):
		t.Fatal("the holding handler did not start")
	}
	// When a delivery that must start within 100 ms waits behind it for longer
	late := delivery("late", "ok", 1, 10_000)
	late.StartWithinMs = 100
	timer := time.AfterFunc(500*time.Millisecond, func() { close(release) })
	defer timer.Stop()
	out := execute(t, stub, late)["late"]
	<-held
	// Then it was never run, and says so (the dispatcher gives it back unspent)
	if out.GetKind() != pb.OutcomeKind_OUTCOME_KIND_NOT_STARTED || out.GetStartedAtMs() != 0 ||
		!strings.Contains(out.GetError(), "not started within 100 ms") {
		t.Errorf("late: %v started_at_ms=%d %q", out.GetKind(), out.GetStartedAtMs(), out.GetError())
	}
	mu.Lock()
	if len(ran) != 0 {
		t.Errorf("handler ran for %v", ran)
	}
	mu.Unlock()
	// While one that starts in time runs as usual
	onTime := delivery("on-time", "ok", 1, 5000)
	onTime.StartWithinMs = 5000
	if o := execute(t, stub, onTime)["on-time"]; o.GetKind() != pb.OutcomeKind_OUTCOME_KIND_SUCCEEDED {
		t.Errorf("on-time: %v %q", o.GetKind(), o.GetError())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != 1 || ran[0] != "on-time" {
		t.Errorf("ran %v, want [on-time]", ran)
	}
}

func TestExecutorDeliveryArrivingAfterItsStartByInstantIsNotRun(t *testing.T) {
	var mu sync.Mutex
	var ran []string
	_, stub := startExecutor(t, map[string]HandlerFunc{
		"ok": func(_ context.Context, task *Task) error {
			mu.Lock()
			ran = append(ran, task.TaskID)
			mu.Unlock()
			return nil
		},
	})
	// A batch held up on its way (its dispatcher froze as it sent it): the lease it
	// carries had run out before it arrived, however long start_within_ms says.
	late := delivery("late", "ok", 1, 5000)
	late.StartWithinMs = 60_000
	late.StartByUnixMs = time.Now().UnixMilli() - 1
	onTime := delivery("on-time", "ok", 1, 5000)
	onTime.StartWithinMs = 60_000
	onTime.StartByUnixMs = time.Now().UnixMilli() + 60_000
	out := execute(t, stub, late, onTime)
	if o := out["late"]; o.GetKind() != pb.OutcomeKind_OUTCOME_KIND_NOT_STARTED || o.GetStartedAtMs() != 0 ||
		!strings.Contains(o.GetError(), "not started by") {
		t.Errorf("late: %v started_at_ms=%d %q", o.GetKind(), o.GetStartedAtMs(), o.GetError())
	}
	if o := out["on-time"]; o.GetKind() != pb.OutcomeKind_OUTCOME_KIND_SUCCEEDED {
		t.Errorf("on-time: %v %q", o.GetKind(), o.GetError())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != 1 || ran[0] != "on-time" {
		t.Errorf("ran %v, want [on-time]", ran)
	}
}

func TestExecutorGracefulStopFinishesInFlightWork(t *testing.T) {
	started := make(chan struct{})
	ex, stub := startExecutor(t, map[string]HandlerFunc{
		"slow": func(ctx context.Context, _ *Task) error {
			close(started)
			time.Sleep(200 * time.Millisecond)
			return nil
		},
	})
	done := make(chan map[string]*pb.Outcome)
	go func() { done <- execute(t, stub, delivery("s", "slow", 1, 5000)) }()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ex.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if o := (<-done)["s"]; o.GetKind() != pb.OutcomeKind_OUTCOME_KIND_SUCCEEDED {
		t.Errorf("in-flight work: %v %q", o.GetKind(), o.GetError())
	}
	_, err := stub.Execute(context.Background(), &pb.ExecuteRequest{Deliveries: []*pb.Delivery{delivery("x", "slow", 1, 100)}})
	if status.Code(err) != codes.Unavailable {
		t.Errorf("a call after Stop: got %v, want UNAVAILABLE", err)
	}
	if err := ex.Stop(ctx); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
}

func TestExecutorStopPastDeadlineHandsWorkBack(t *testing.T) {
	started := make(chan struct{}, 2)
	ex, stub := startExecutor(t, map[string]HandlerFunc{
		"stuck": func(ctx context.Context, _ *Task) error { started <- struct{}{}; <-ctx.Done(); return ctx.Err() },
		"deaf":  func(context.Context, *Task) error { started <- struct{}{}; time.Sleep(2 * time.Second); return nil },
	}, WithMaxInFlight(2))
	done := make(chan map[string]*pb.Outcome)
	go func() {
		done <- execute(t, stub, delivery("s", "stuck", 1, 60000), delivery("d", "deaf", 1, 60000), delivery("w", "stuck", 1, 60000))
	}()
	<-started
	<-started
	waitFor(t, func() bool { return ex.Waiting() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := ex.Stop(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Stop: got %v, want an error wrapping DeadlineExceeded", err)
	}
	for id, o := range <-done {
		if o.GetKind() != pb.OutcomeKind_OUTCOME_KIND_RETRYABLE_FAILURE || !strings.Contains(o.GetError(), "handed back") {
			t.Errorf("%s: %v %q, want a hand-back", id, o.GetKind(), o.GetError())
		}
	}
}

func TestExecutorLifecycleErrors(t *testing.T) {
	ex, err := NewExecutor("shop", WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	if err := ex.Stop(context.Background()); err != nil {
		t.Errorf("Stop before Start: %v", err)
	}
	if err := ex.Start(context.Background()); err == nil {
		t.Error("Start without handlers succeeded")
	}
	if _, err := NewExecutor("Shop"); err == nil {
		t.Error("a bad namespace was accepted")
	}
	ex2, _ := NewExecutor("shop", WithLogger(quiet))
	if err := ex2.Handle("a:b", func(context.Context, *Task) error { return nil }); err != nil {
		t.Errorf("a task type with a colon (valid on the server): %v", err)
	}
	if err := ex2.Handle("a:b", func(context.Context, *Task) error { return nil }); err == nil {
		t.Error("a duplicate handler was accepted")
	}
}

func TestOutcomeObserver(t *testing.T) {
	var mu sync.Mutex
	var got []Outcome
	_, stub := startExecutor(t, map[string]HandlerFunc{"ok": func(context.Context, *Task) error { return nil }},
		WithOutcomeObserver(func(o Outcome) { mu.Lock(); got = append(got, o); mu.Unlock() }))
	execute(t, stub, delivery("1", "ok", 2, 1000))
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0].TaskID != "1" || got[0].Attempt != 2 || got[0].Kind != OutcomeSucceeded || got[0].TaskType != "ok" {
		t.Errorf("observed %+v", got)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The Work stream: each outcome comes when its task ends, not with a slow one
// sent beside it, and the stream ends once the dispatcher has closed its side
// and what runs has answered.
func TestExecutorWorkStreamSendsOutcomesAsTasksEnd(t *testing.T) {
	release := make(chan struct{})
	_, stub := startExecutor(t, map[string]HandlerFunc{
		"slow": func(ctx context.Context, _ *Task) error { <-release; return nil },
		"fast": func(ctx context.Context, _ *Task) error { return nil },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := stub.Work(ctx)
	if err != nil {
		t.Fatal(err)
	}
	send := func(ds ...*pb.Delivery) {
		if err := stream.Send(&pb.ExecuteRequest{Deliveries: ds, DispatcherNode: "d1"}); err != nil {
			t.Fatal(err)
		}
	}
	send(delivery("s", "slow", 1, 5000))
	send(delivery("f1", "fast", 1, 5000), delivery("f2", "fast", 1, 5000), delivery("x", "nope", 1, 5000))
	got := map[string]*pb.Outcome{}
	for len(got) < 3 {
		resp, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range resp.GetOutcomes() {
			got[o.GetTaskId()] = o
		}
	}
	if _, ok := got["s"]; ok {
		t.Fatal("the slow task answered before it was released")
	}
	if got["x"].GetKind() != pb.OutcomeKind_OUTCOME_KIND_NO_HANDLER || got["f1"].GetKind() != pb.OutcomeKind_OUTCOME_KIND_SUCCEEDED {
		t.Errorf("outcomes: %v", got)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	close(release)
	resp, err := stream.Recv()
	if err != nil || len(resp.GetOutcomes()) != 1 || resp.GetOutcomes()[0].GetTaskId() != "s" {
		t.Fatalf("the slow task's outcome: %v %v", resp, err)
	}
	if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
		t.Errorf("after the last outcome: %v, want the end of the stream", err)
	}
}

// A stopping executor finishes what runs on its streams, sends the outcomes and
// ends them; Stop does not wait for the dispatcher to close its side.
func TestExecutorStopEndsWorkStreamsAfterTheirOutcomes(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	ex, stub := startExecutor(t, map[string]HandlerFunc{
		"slow": func(ctx context.Context, _ *Task) error { close(started); <-release; return nil },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := stub.Work(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&pb.ExecuteRequest{Deliveries: []*pb.Delivery{delivery("s", "slow", 1, 5000)}}); err != nil {
		t.Fatal(err)
	}
	<-started
	stopped := make(chan error, 1)
	go func() { stopped <- ex.Stop(ctx) }()
	close(release)
	resp, err := stream.Recv()
	if err != nil || resp.GetOutcomes()[0].GetKind() != pb.OutcomeKind_OUTCOME_KIND_SUCCEEDED {
		t.Fatalf("the in-flight task's outcome: %v %v", resp, err)
	}
	if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
		t.Errorf("after the last outcome: %v, want the end of the stream", err)
	}
	if err := <-stopped; err != nil {
		t.Errorf("Stop: %v", err)
	}
}
