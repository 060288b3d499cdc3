package taskring

import (
	"context"
	"errors"
	"strings"
	"testing"

	pb "github.com/taskring/taskring/sdk/go/pb/taskring/v1"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// recordSpans installs a TracerProvider that records every span as the global
// one (the executor's spans go there) for the length of the test.
func recordSpans(t *testing.T) (*tracetest.SpanRecorder, trace.Tracer) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	otel.SetTracerProvider(tp)
	t.Cleanup(func() {
		otel.SetTracerProvider(noop.NewTracerProvider())
		_ = tp.Shutdown(context.Background())
	})
	return rec, tp.Tracer("test")
}

func wantTraceparent(t *testing.T, got string, sc trace.SpanContext) {
	t.Helper()
	want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
	if got != want || !isTraceparent(got) {
		t.Errorf("trace_id %q, want the traceparent %q", got, want)
	}
}

func TestSubmitInsideASpanSendsItsTraceparent(t *testing.T) {
	_, tracer := recordSpans(t)
	nodes, c := cluster(t, 1)
	ctx, span := tracer.Start(context.Background(), "request")
	defer span.End()
	sc := span.SpanContext()

	if _, err := c.Submit(ctx, TaskSpec{Namespace: "shop", TaskType: "t"}); err != nil {
		t.Fatal(err)
	}
	wantTraceparent(t, nodes[0].last.GetTraceId(), sc)

	if _, err := c.SubmitBatch(ctx, []TaskSpec{{Namespace: "shop", TaskType: "t", TaskID: "1"},
		{Namespace: "shop", TaskType: "t", TaskID: "2", TraceID: "req-42"}}); err != nil {
		t.Fatal(err)
	}
	batch := nodes[0].batch
	if len(batch) != 2 {
		t.Fatalf("batch of %d tasks", len(batch))
	}
	wantTraceparent(t, batch[0].GetTraceId(), sc)
	if batch[1].GetTraceId() != "req-42" {
		t.Errorf("a caller's trace id in a batch became %q", batch[1].GetTraceId())
	}
}

func TestSubmitKeepsTheCallersTraceID(t *testing.T) {
	_, tracer := recordSpans(t)
	nodes, c := cluster(t, 1)
	ctx, span := tracer.Start(context.Background(), "request")
	defer span.End()
	if _, err := c.Submit(ctx, TaskSpec{Namespace: "shop", TaskType: "t", TraceID: "req-42"}); err != nil {
		t.Fatal(err)
	}
	if got := nodes[0].last.GetTraceId(); got != "req-42" {
		t.Errorf("trace_id %q, want the caller's req-42", got)
	}
}

func TestSubmitOutsideASpanSendsNoTraceparent(t *testing.T) {
	_, tracer := recordSpans(t)
	nodes, c := cluster(t, 1)
	if _, err := c.Submit(context.Background(), TaskSpec{Namespace: "shop", TaskType: "t"}); err != nil {
		t.Fatal(err)
	}
	if got := nodes[0].last.GetTraceId(); got != "" {
		t.Errorf("trace_id %q outside any span", got)
	}
	// A span elsewhere is not the caller's: only the ctx passed to the call counts.
	_, span := tracer.Start(context.Background(), "elsewhere")
	defer span.End()
	if _, err := c.SubmitBatch(context.Background(), []TaskSpec{{Namespace: "shop", TaskType: "t", TaskID: "1"}}); err != nil {
		t.Fatal(err)
	}
	if got := nodes[0].batch[0].GetTraceId(); got != "" {
		t.Errorf("batch trace_id %q outside any span", got)
	}
}

func TestIsTraceparent(t *testing.T) {
	for v, want := range map[string]bool{
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01": true,
		"req-42":                        false,
		"":                              false,
		"00-" + strings.Repeat("x", 52): false,
		"01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01": false,
	} {
		if got := isTraceparent(v); got != want {
			t.Errorf("isTraceparent(%q) = %v", v, got)
		}
	}
}

func TestExecutorRunsATracedTaskInAChildSpan(t *testing.T) {
	rec, tracer := recordSpans(t)
	seen := make(chan trace.SpanContext, 2)
	_, stub := startExecutor(t, map[string]HandlerFunc{
		"type": func(ctx context.Context, _ *Task) error {
			seen <- trace.SpanContextFromContext(ctx)
			return nil
		},
		"fails": func(context.Context, *Task) error { return errors.New("upstream down") },
	})
	_, request := tracer.Start(context.Background(), "request")
	request.End()
	parent := request.SpanContext()
	traceparent := "00-" + parent.TraceID().String() + "-" + parent.SpanID().String() + "-01"

	d := delivery("1", "type", 3, 5000)
	d.Task.TraceId = traceparent
	failing := delivery("2", "fails", 1, 5000)
	failing.Task.TraceId = traceparent
	out := execute(t, stub, d, failing)
	if out["1"].GetKind() != pb.OutcomeKind_OUTCOME_KIND_SUCCEEDED || out["2"].GetKind() != pb.OutcomeKind_OUTCOME_KIND_RETRYABLE_FAILURE {
		t.Fatalf("outcomes: %v", out)
	}

	handlerSpan := <-seen
	if !handlerSpan.IsValid() || handlerSpan.TraceID() != parent.TraceID() || handlerSpan.SpanID() == parent.SpanID() {
		t.Errorf("handler's span context %v, want a child in trace %v", handlerSpan, parent.TraceID())
	}
	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		if s.Name() != "request" {
			spans[s.Attributes()[0].Value.AsString()] = s
		}
	}
	s, ok := spans["1"]
	if !ok || s.Name() != "taskring.execute shop/type" {
		t.Fatalf("ended spans: %v", rec.Ended())
	}
	if s.Parent().SpanID() != parent.SpanID() || s.SpanContext().TraceID() != parent.TraceID() ||
		s.SpanContext().SpanID() != handlerSpan.SpanID() || !s.Parent().IsRemote() {
		t.Errorf("span %v with parent %v, want the child of %v", s.SpanContext(), s.Parent(), parent)
	}
	if s.SpanKind() != trace.SpanKindConsumer {
		t.Errorf("span kind %v", s.SpanKind())
	}
	want := []attribute.KeyValue{
		attribute.String("taskring.task_id", "1"), attribute.Int64("taskring.attempt", 3),
		attribute.String("taskring.namespace", "shop"), attribute.String("taskring.task_type", "type"),
	}
	if got := s.Attributes(); len(got) != len(want) {
		t.Errorf("attributes %v", got)
	} else {
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("attribute %v, want %v", got[i], want[i])
			}
		}
	}
	if s.Status().Code != codes.Unset {
		t.Errorf("status of a succeeded handler's span: %v", s.Status())
	}
	if f := spans["2"]; f == nil || f.Status().Code != codes.Error || f.Status().Description != "upstream down" {
		t.Errorf("span of a failed handler: %v", f)
	}
}

func TestExecutorRunsAnUntracedTaskWithoutASpan(t *testing.T) {
	rec, _ := recordSpans(t)
	seen := make(chan trace.SpanContext, 1)
	_, stub := startExecutor(t, map[string]HandlerFunc{
		"type": func(ctx context.Context, _ *Task) error {
			seen <- trace.SpanContextFromContext(ctx)
			return nil
		},
	})
	out := execute(t, stub, delivery("1", "type", 1, 5000)) // trace_id "tr": a plain correlation id
	if out["1"].GetKind() != pb.OutcomeKind_OUTCOME_KIND_SUCCEEDED {
		t.Fatalf("outcome: %v", out["1"])
	}
	if sc := <-seen; sc.IsValid() {
		t.Errorf("an untraced task's handler has span context %v", sc)
	}
	if ended := rec.Ended(); len(ended) != 0 {
		t.Errorf("spans for an untraced task: %v", ended)
	}
}
