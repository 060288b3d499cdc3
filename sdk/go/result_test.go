package taskring

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	pb "github.com/taskring/taskring/sdk/go/pb/taskring/v1"
)

func TestEncodeResult(t *testing.T) {
	for _, c := range []struct {
		name  string
		value any
		text  string
	}{
		{"nothing", nil, ""},
		{"a nil RawMessage", json.RawMessage(nil), ""},
		{"a map", map[string]any{"b": 1, "a": "<x>"}, `{"a":"<x>","b":1}`}, // no HTML escaping, as Python
		{"JSON text, compacted", json.RawMessage(`{ "z": 1, "a": [1, 2] }`), `{"z":1,"a":[1,2]}`},
		{"a scalar", 42, "42"},
		{"exactly the limit", strings.Repeat("x", maxResultBytes-2), `"` + strings.Repeat("x", maxResultBytes-2) + `"`},
	} {
		text, problem := encodeResult(c.value)
		if text != c.text || problem != "" {
			t.Errorf("%s: got %q (problem %q), want %q", c.name, text, problem, c.text)
		}
	}
	for _, c := range []struct {
		name  string
		value any
		want  string
	}{
		{"over the limit", strings.Repeat("x", maxResultBytes-1), "result: 65537 bytes as JSON, more than 65536"},
		{"NaN", math.NaN(), "result: the handler's result is not encodable as JSON"},
		{"a channel", make(chan int), "result: the handler's result is not encodable as JSON"},
		{"bad JSON text", json.RawMessage(`{"a":`), "result: the handler's result is not valid JSON"},
	} {
		text, problem := encodeResult(c.value)
		if text != "" || !strings.HasPrefix(problem, c.want) {
			t.Errorf("%s: got %q, problem %q, want it to start %q", c.name, text, problem, c.want)
		}
	}
}

func TestParentResultsFromPB(t *testing.T) {
	d := &pb.Delivery{ParentResultsTruncated: true, ParentResults: []*pb.ParentResult{
		{Key: "charge", TaskId: "id-c", Outcome: "succeeded", ResultJson: `{"paid":true}`},
		{Key: "email", TaskId: "id-e", Outcome: "ignored", Error: "smtp down"},
		{Key: "ship", TaskId: "id-s", Outcome: "succeeded"}, // succeeded, no result, truncated: left out
	}}
	got, err := parentResultsFromPB(d)
	if err != nil || len(got) != 3 {
		t.Fatalf("%+v %v", got, err)
	}
	var paid struct{ Paid bool }
	if ok, err := got[0].Decode(&paid); !ok || err != nil || !paid.Paid || got[0].Truncated || got[0].TaskID != "id-c" {
		t.Errorf("charge: %+v %v %v", got[0], ok, err)
	}
	if got[1].Truncated || got[1].Result != nil || got[1].Error != "smtp down" || got[1].Outcome != "ignored" {
		t.Errorf("email: %+v", got[1])
	}
	if ok, err := got[1].Decode(&paid); ok || err != nil {
		t.Errorf("email has no result: %v %v", ok, err)
	}
	if ok, err := got[2].Decode(&paid); !got[2].Truncated || ok || !errors.Is(err, ErrResultNotDelivered) {
		t.Errorf("ship was left out: %+v %v %v", got[2], ok, err)
	}

	d.ParentResultsTruncated = false
	if got, _ := parentResultsFromPB(d); got[2].Truncated {
		t.Error("truncated on a delivery that was not")
	}
	if got, err := parentResultsFromPB(&pb.Delivery{}); got != nil || err != nil {
		t.Errorf("no parents: %v %v", got, err)
	}
	d.ParentResults[0].ResultJson = "{nope"
	if _, err := parentResultsFromPB(d); err == nil || !strings.Contains(err.Error(), "parent_results[0].result_json") {
		t.Errorf("a result that is not JSON: %v", err)
	}
}

func TestTaskParentResultByKey(t *testing.T) {
	task := &Task{ParentResults: []ParentResult{{Key: "a", Outcome: "succeeded"}, {Key: "b", Outcome: "skipped"}}}
	if p, ok := task.ParentResult("b"); !ok || p.Outcome != "skipped" {
		t.Errorf("b: %+v %v", p, ok)
	}
	if _, ok := task.ParentResult("c"); ok {
		t.Error("found a parent that is not one")
	}
}

func graphDelivery(id string, keep bool, parents ...*pb.ParentResult) *pb.Delivery {
	d := delivery(id, "graph", 1, 5000)
	d.Task.Graph = &pb.GraphRef{GraphId: "order-7", Key: id, HasDependents: keep, Parents: uint32(len(parents))}
	d.KeepResult = keep
	d.ParentResults = parents
	return d
}

// Through a running executor: the result is sent only when kept, a result
// that cannot be kept fails the attempt for good, and the handler sees its
// parents and its graph.
func TestExecutorSendsTheResultOnlyWhenKept(t *testing.T) {
	_, stub := startExecutor(t, map[string]HandlerFunc{
		"graph": func(_ context.Context, task *Task) error {
			switch task.TaskID {
			case "too-big":
				task.SetResult(strings.Repeat("x", maxResultBytes))
			case "not-json", "not-json-not-kept":
				task.SetResult(math.Inf(1))
			case "failed":
				task.SetResult("ignored")
				return errors.New("boom")
			case "child":
				p, ok := task.ParentResult("kept")
				if !ok || string(p.Result) != `{"type":"graph"}` || task.GraphID != "order-7" || task.GraphKey != "child" {
					return NonRetryable(errors.New("the child does not see its parent"))
				}
				task.SetResult(map[string]string{"saw": p.Outcome})
			default:
				task.SetResult(map[string]string{"type": "graph"})
			}
			return nil
		},
	})
	out := execute(t, stub,
		graphDelivery("kept", true), graphDelivery("not-kept", false), graphDelivery("too-big", true),
		graphDelivery("not-json", true), graphDelivery("failed", true), graphDelivery("not-json-not-kept", false),
		graphDelivery("child", true, &pb.ParentResult{Key: "kept", TaskId: "kept", Outcome: "succeeded",
			ResultJson: `{"type":"graph"}`}))
	if o := out["kept"]; o.GetKind() != pb.OutcomeKind_OUTCOME_KIND_SUCCEEDED || o.GetResultJson() != `{"type":"graph"}` {
		t.Errorf("kept: %v", o)
	}
	if o := out["not-kept"]; o.GetKind() != pb.OutcomeKind_OUTCOME_KIND_SUCCEEDED || o.GetResultJson() != "" {
		t.Errorf("not kept: %v", o)
	}
	if o := out["too-big"]; o.GetKind() != pb.OutcomeKind_OUTCOME_KIND_NON_RETRYABLE_FAILURE ||
		o.GetError() != "result: 65538 bytes as JSON, more than 65536" || o.GetResultJson() != "" {
		t.Errorf("too big: %v", o)
	}
	if o := out["not-json"]; o.GetKind() != pb.OutcomeKind_OUTCOME_KIND_NON_RETRYABLE_FAILURE ||
		!strings.HasPrefix(o.GetError(), "result: ") {
		t.Errorf("not JSON: %v", o)
	}
	if o := out["failed"]; o.GetKind() != pb.OutcomeKind_OUTCOME_KIND_RETRYABLE_FAILURE || o.GetResultJson() != "" {
		t.Errorf("a failed attempt sent its result: %v", o)
	}
	// Not kept: the value is never encoded, so it cannot fail the attempt.
	if o := out["not-json-not-kept"]; o.GetKind() != pb.OutcomeKind_OUTCOME_KIND_SUCCEEDED {
		t.Errorf("not JSON, not kept: %v", o)
	}
	if o := out["child"]; o.GetKind() != pb.OutcomeKind_OUTCOME_KIND_SUCCEEDED || o.GetResultJson() != `{"saw":"succeeded"}` {
		t.Errorf("child: %v", o)
	}
}

func TestExecutorRefusesADeliveryWhoseParentResultIsNotJSON(t *testing.T) {
	var ran atomic.Bool
	_, stub := startExecutor(t, map[string]HandlerFunc{"graph": func(context.Context, *Task) error { ran.Store(true); return nil }})
	out := execute(t, stub, graphDelivery("child", false, &pb.ParentResult{Key: "p", Outcome: "succeeded", ResultJson: "{"}))
	if o := out["child"]; o.GetKind() != pb.OutcomeKind_OUTCOME_KIND_NON_RETRYABLE_FAILURE || ran.Load() {
		t.Errorf("ran %v, outcome %v", ran.Load(), o)
	}
}

func TestSetResultLastCallWins(t *testing.T) {
	task := &Task{KeepResult: true}
	if task.Result() != nil {
		t.Error("a result before any SetResult")
	}
	task.SetResult(1)
	task.SetResult(map[string]int{"n": 2})
	if text, problem := task.keptResult(); text != `{"n":2}` || problem != "" {
		t.Errorf("kept %q (%q)", text, problem)
	}
	task.SetResult(nil)
	if text, problem := task.keptResult(); text != "" || problem != "" || task.Result() != nil {
		t.Errorf("taken back: kept %q (%q)", text, problem)
	}
}
