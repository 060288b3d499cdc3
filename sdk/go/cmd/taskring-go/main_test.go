package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	taskring "github.com/taskring/taskring/sdk/go"
)

func TestParseSubmit(t *testing.T) {
	a, err := parseSubmit([]string{"--nodes", "a:1,b:2", "--namespace", "shop", "--type", "t", "--payload", `{"x":1}`,
		"--delay-ms", "1500", "--max-retries", "2", "--retry-schedule-ms", "200,300"})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.nodes) != 2 || a.spec.Delay != 1500*time.Millisecond || *a.spec.MaxRetries != 2 ||
		len(a.spec.RetryPolicy.Schedule) != 2 || a.spec.RetryPolicy.Schedule[1] != 300*time.Millisecond {
		t.Errorf("parsed %+v", a)
	}
	a, _ = parseSubmit([]string{"--nodes", "a:1", "--namespace", "shop", "--type", "t"})
	if a.spec.MaxRetries != nil || a.spec.RetryPolicy != nil {
		t.Errorf("defaults %+v", a.spec)
	}
	if _, err := parseSubmit([]string{"--nodes", "a:1", "--namespace", "shop", "--type", "t", "--payload", "{"}); err == nil {
		t.Error("bad JSON accepted")
	}
}

func TestParseExecutorAndBehaviours(t *testing.T) {
	a, err := parseExecutor([]string{"--zk", "127.0.0.1:22181/x", "--namespace", "shop", "--types", "a,b", "--behavior", "panic-once"}, noEnv)
	if err != nil || len(a.types) != 2 {
		t.Fatalf("%+v %v", a, err)
	}
	if _, err := parseExecutor([]string{"--zk", "z", "--namespace", "n", "--types", "a", "--behavior", "maybe"}, noEnv); err == nil {
		t.Error("unknown behaviour accepted")
	}
}

func TestRunUsage(t *testing.T) {
	if run(nil) != 2 || run([]string{"nope"}) != 2 {
		t.Error("usage errors do not exit 2")
	}
	var out bytes.Buffer
	if err := runSubmit([]string{"--namespace", "x"}, &out); err == nil || !strings.Contains(err.Error(), "--nodes") {
		t.Errorf("missing flags: %v", err)
	}
}

func TestOnceBehaviours(t *testing.T) {
	for _, name := range []string{"panic-once", "fail-once"} {
		h, _ := behavior(name, nil)
		first := func() (err error, panicked bool) {
			defer func() {
				if recover() != nil {
					panicked = true
				}
			}()
			return h(context.Background(), &taskring.Task{TaskID: "t", Attempt: 1}), false
		}
		err, panicked := first()
		if name == "panic-once" && !panicked || name == "fail-once" && err == nil {
			t.Errorf("%s: attempt 1 did not fail (err %v, panicked %v)", name, err, panicked)
		}
		if err := h(context.Background(), &taskring.Task{TaskID: "t", Attempt: 2}); err != nil {
			t.Errorf("%s: attempt 2 failed: %v", name, err)
		}
	}
}

// The heartbeat behaviour without a stream (Heartbeat sends nothing then):
// it works for payload.ms, resumes from the last details, and prints the
// "stopped" line, naming the verdict and reason, when its ctx is stopped.
func TestHeartbeatBehaviour(t *testing.T) {
	var buf bytes.Buffer
	out := &lines{out: &buf}
	h, err := behavior("heartbeat", out)
	if err != nil {
		t.Fatal(err)
	}
	task := func(payload, last string) *taskring.Task {
		return &taskring.Task{TaskID: "hb-1", Attempt: 1, Payload: []byte(payload), LastHeartbeatDetails: last}
	}
	t0 := time.Now()
	if err := h(context.Background(), task(`{"ms": 120, "every_ms": 20}`, "")); err != nil {
		t.Fatalf("a short task failed: %v", err)
	}
	if took := time.Since(t0); took < 120*time.Millisecond {
		t.Errorf("done after %v, before its 120 ms", took)
	}
	// Resumed: the previous attempt had done it all.
	t0 = time.Now()
	if err := h(context.Background(), task(`{"ms": 60000}`, `{"done_ms": 60000}`)); err != nil {
		t.Fatalf("a resumed task failed: %v", err)
	}
	if took := time.Since(t0); took > 5*time.Second {
		t.Errorf("a resumed task that was done took %v", took)
	}
	if buf.Len() != 0 {
		t.Errorf("printed %q without a stop", buf.String())
	}

	ctx, stop := context.WithCancelCause(context.Background())
	cause := &taskring.TaskStoppedError{Err: taskring.ErrTaskCancelled, Reason: "the task was cancelled"}
	ended := make(chan error, 1)
	go func() { ended <- h(ctx, task(`{"ms": 60000, "every_ms": 10}`, "")) }()
	stop(cause)
	select {
	case err := <-ended:
		if !errors.Is(err, taskring.ErrTaskCancelled) {
			t.Errorf("returned %v, not the stop's cause", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("not stopped within 10 s")
	}
	if got, want := buf.String(), "stopped hb-1 cancelled: the task was cancelled\n"; got != want {
		t.Errorf("printed %q, want %q", got, want)
	}

	var nr *taskring.NonRetryableError
	if err := h(context.Background(), task(`{"ms": "long"}`, "")); !errors.As(err, &nr) {
		t.Errorf("a bad payload gave %v, not a non-retryable error", err)
	}
}
