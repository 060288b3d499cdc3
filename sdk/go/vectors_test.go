package taskring

// The shared test vectors of every SDK (sdk/vectors, checked against the
// Python reference by tests/unit/sdk/test_vectors.py). Server-checked
// validation cases run only in the integration test (integration_test.go).

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	pb "github.com/taskring/taskring/sdk/go/pb/taskring/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
)

const vectorsDir = "../vectors"

func loadVectors(t *testing.T, name string, into any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vectorsDir, name))
	if err != nil {
		t.Fatalf("shared vectors missing: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(into); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// vectorInput is the SDK-neutral submit of envelope.json and validation.json;
// a nil field is one the caller did not give.
type vectorInput struct {
	Namespace      string          `json:"namespace"`
	TaskType       string          `json:"task_type"`
	TaskID         string          `json:"task_id"`
	Payload        json.RawMessage `json:"payload"`
	PayloadVersion uint32          `json:"payload_version"`
	DelayMs        *int64          `json:"delay_ms"`
	ScheduleTime   *string         `json:"schedule_time"`
	TimeoutMs      *int64          `json:"timeout_ms"`
	MaxRetries     *int            `json:"max_retries"`
	Priority       string          `json:"priority"`
	RetryPolicy    *vectorPolicy   `json:"retry_policy"`
	TraceID        string          `json:"trace_id"`
	UniqueKey      string          `json:"unique_key"`
}

type vectorPolicy struct {
	InitialBackoffMs int64   `json:"initial_backoff_ms"`
	MaxBackoffMs     int64   `json:"max_backoff_ms"`
	Multiplier       float64 `json:"multiplier"`
	ScheduleMs       []int64 `json:"schedule_ms"`
}

func (p *vectorPolicy) toPolicy() RetryPolicy {
	r := RetryPolicy{
		InitialBackoff: time.Duration(p.InitialBackoffMs) * time.Millisecond,
		MaxBackoff:     time.Duration(p.MaxBackoffMs) * time.Millisecond,
		Multiplier:     p.Multiplier,
	}
	for _, w := range p.ScheduleMs {
		r.Schedule = append(r.Schedule, time.Duration(w)*time.Millisecond)
	}
	return r
}

// toSpec builds the TaskSpec a Go caller would write for in. An error here
// is the Go equivalent of a refused submit: a schedule time without an offset
// cannot become a time.Time at all (Go has no naive time).
func (in *vectorInput) toSpec() (TaskSpec, error) {
	s := TaskSpec{
		Namespace: in.Namespace, TaskType: in.TaskType, TaskID: in.TaskID,
		PayloadVersion: in.PayloadVersion, MaxRetries: in.MaxRetries, Priority: Priority(in.Priority),
		TraceID: in.TraceID, UniqueKey: in.UniqueKey,
	}
	if in.Payload != nil {
		s.Payload = in.Payload
	}
	if in.DelayMs != nil {
		s.Delay = time.Duration(*in.DelayMs) * time.Millisecond
	}
	if in.ScheduleTime != nil {
		st, err := parseInstant(*in.ScheduleTime)
		if err != nil {
			return s, &ValidationError{Field: "schedule_time", Problem: err.Error()}
		}
		s.ScheduleTime = st
	}
	if in.TimeoutMs != nil {
		s.Timeout = time.Duration(*in.TimeoutMs) * time.Millisecond
	}
	if in.RetryPolicy != nil {
		p := in.RetryPolicy.toPolicy()
		s.RetryPolicy = &p
	}
	return s, nil
}

func generic(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	return v
}

func TestVectorsEnvelope(t *testing.T) {
	var doc struct {
		Cases []struct {
			Name  string                     `json:"name"`
			Input vectorInput                `json:"input"`
			Wire  map[string]json.RawMessage `json:"wire"`
			// ScheduleTimeEpochMs is the instant rule 4 checks scheduleTime against.
			ScheduleTimeEpochMs *int64 `json:"schedule_time_epoch_ms"`
		} `json:"cases"`
	}
	loadVectors(t, "envelope.json", &doc)
	if len(doc.Cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range doc.Cases {
		t.Run(c.Name, func(t *testing.T) {
			spec, err := c.Input.toSpec()
			if err != nil {
				t.Fatal(err)
			}
			task, verr := specToPB(&spec)
			if verr != nil {
				t.Fatal(verr)
			}
			raw, err := protojson.Marshal(task)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]json.RawMessage
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
			want := map[string]json.RawMessage{}
			for k, v := range c.Wire {
				if k == "payload_json_parsed" {
					k = "payloadJson"
				}
				want[k] = v
			}
			if keys(got) != keys(want) {
				t.Fatalf("keys: got %s, want %s\n%s", keys(got), keys(want), raw)
			}
			for k, w := range want {
				switch k {
				case "payloadJson":
					var text string
					if err := json.Unmarshal(got[k], &text); err != nil {
						t.Fatal(err)
					}
					var compact bytes.Buffer
					_ = json.Compact(&compact, []byte(text))
					if compact.String() != text {
						t.Errorf("payloadJson is not compact: %s", text)
					}
					if !reflect.DeepEqual(generic(t, []byte(text)), generic(t, w)) {
						t.Errorf("payloadJson: got %s, want %s", text, w)
					}
				case "scheduleTime":
					if string(got[k]) != string(w) {
						t.Errorf("scheduleTime: got %s, want the Python text %s", got[k], w)
					}
					var text string
					_ = json.Unmarshal(got[k], &text)
					at, err := parseInstant(text)
					if err != nil {
						t.Fatal(err)
					}
					if c.ScheduleTimeEpochMs == nil || at.UnixMilli() != *c.ScheduleTimeEpochMs {
						t.Errorf("scheduleTime instant: got %d ms, want %v", at.UnixMilli(), c.ScheduleTimeEpochMs)
					}
				default:
					if !reflect.DeepEqual(generic(t, got[k]), generic(t, w)) {
						t.Errorf("%s: got %s, want %s", k, got[k], w)
					}
				}
			}
		})
	}
}

func keys(m map[string]json.RawMessage) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ",")
}

func TestVectorsInstants(t *testing.T) {
	var doc struct {
		Instants []struct {
			Name    string `json:"name"`
			Text    string `json:"text"`
			EpochMs int64  `json:"epoch_ms"`
		} `json:"instants"`
	}
	loadVectors(t, "envelope.json", &doc)
	if len(doc.Instants) == 0 {
		t.Fatal("no instants")
	}
	for _, c := range doc.Instants {
		t.Run(c.Name, func(t *testing.T) {
			at, err := parseInstant(c.Text)
			if err != nil {
				t.Fatal(err)
			}
			if at.UnixMilli() != c.EpochMs {
				t.Errorf("%s: got %d ms, want %d", c.Text, at.UnixMilli(), c.EpochMs)
			}
		})
	}
}

func TestVectorsDecode(t *testing.T) {
	var doc struct {
		Decode []struct {
			Name     string          `json:"name"`
			Response json.RawMessage `json:"response"`
			Expect   json.RawMessage `json:"expect"`
		} `json:"decode"`
	}
	loadVectors(t, "envelope.json", &doc)
	if len(doc.Decode) == 0 {
		t.Fatal("no decode cases")
	}
	for _, c := range doc.Decode {
		t.Run(c.Name, func(t *testing.T) {
			var resp pb.GetTaskResponse
			if err := protojson.Unmarshal(c.Response, &resp); err != nil {
				t.Fatal(err)
			}
			info, err := taskInfoFromPB(&resp)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(exposed(info))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(generic(t, got), generic(t, c.Expect)) {
				t.Errorf("got  %s\nwant %s", got, c.Expect)
			}
		})
	}
}

// exposed is TaskInfo in the vectors' SDK-neutral shape.
func exposed(i *TaskInfo) map[string]any {
	ms := func(t time.Time) any {
		if t.IsZero() {
			return nil
		}
		return t.UnixMilli()
	}
	var timeout, maxRetries any
	if i.Timeout != 0 {
		timeout = i.Timeout.Milliseconds()
	}
	if i.MaxRetries != nil {
		maxRetries = *i.MaxRetries
	}
	history := []any{}
	for _, e := range i.History {
		history = append(history, map[string]any{
			"state": e.State, "at_epoch_ms": e.At.UnixMilli(), "node": e.Node, "attempt": e.Attempt, "detail": e.Detail,
		})
	}
	return map[string]any{
		"task_id": i.TaskID, "namespace": i.Namespace, "task_type": i.TaskType, "state": i.State,
		"attempts": i.Attempts, "due_at_epoch_ms": ms(i.DueAt), "slot": i.Slot, "payload": json.RawMessage(i.Payload),
		"payload_version": i.PayloadVersion, "priority": i.Priority, "last_error": i.LastError,
		"last_stack_trace": i.LastStackTrace, "created_at_epoch_ms": ms(i.CreatedAt),
		"schedule_time_epoch_ms": ms(i.ScheduleTime), "timeout_ms": timeout, "max_retries": maxRetries,
		"unique_key": i.UniqueKey, "trace_id": i.TraceID, "history": history,
	}
}

func TestVectorsClientValidation(t *testing.T) {
	var doc struct {
		Cases []struct {
			Name       string      `json:"name"`
			CheckedBy  string      `json:"checked_by"`
			Input      vectorInput `json:"input"`
			ErrorField string      `json:"error_field"`
			OK         bool        `json:"ok"`
		} `json:"cases"`
	}
	loadVectors(t, "validation.json", &doc)
	n := 0
	for _, c := range doc.Cases {
		if c.CheckedBy != "client" {
			continue
		}
		n++
		t.Run(c.Name, func(t *testing.T) {
			spec, err := c.Input.toSpec()
			if err == nil {
				_, verr := specToPB(&spec)
				if verr != nil {
					err = verr
				}
			}
			if c.OK {
				if err != nil {
					t.Fatalf("want ok, got %v", err)
				}
				return
			}
			ve, isVE := err.(*ValidationError)
			if !isVE {
				t.Fatalf("want a *ValidationError naming %s, got %v", c.ErrorField, err)
			}
			if ve.Field != c.ErrorField && ve.Field != strings.TrimSuffix(c.ErrorField, "_ms") {
				t.Errorf("field: got %q, want %q", ve.Field, c.ErrorField)
			}
		})
	}
	if n == 0 {
		t.Fatal("no client cases")
	}
}

func TestVectorsRetry(t *testing.T) {
	var doc struct {
		Cases []struct {
			Name      string       `json:"name"`
			Policy    vectorPolicy `json:"policy"`
			Retry     int          `json:"retry"`
			Jitter    float64      `json:"jitter"`
			CeilingMs *int64       `json:"ceiling_ms"`
			DelayMs   int64        `json:"delay_ms"`
		} `json:"cases"`
	}
	loadVectors(t, "retry.json", &doc)
	if len(doc.Cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range doc.Cases {
		t.Run(c.Name, func(t *testing.T) {
			p := c.Policy.toPolicy()
			ceiling, ok := RetryCeiling(p, c.Retry)
			switch {
			case c.CeilingMs == nil && ok:
				t.Errorf("ceiling: got %d ms, want none (tiered)", ceiling.Milliseconds())
			case c.CeilingMs != nil && (!ok || ceiling.Milliseconds() != *c.CeilingMs):
				t.Errorf("ceiling: got %d ms (%v), want %d", ceiling.Milliseconds(), ok, *c.CeilingMs)
			}
			if got := RetryDelay(p, c.Retry, c.Jitter).Milliseconds(); got != c.DelayMs {
				t.Errorf("delay: got %d ms, want %d", got, c.DelayMs)
			}
		})
	}
}

// TestVectorsServerErrorFields checks, offline, that the field of every
// server-checked case is what InvalidArgumentError.Field parses out of the
// server's "<field>: <problem>" details.
func TestVectorsServerErrorFields(t *testing.T) {
	var doc struct {
		Cases []struct {
			Name       string `json:"name"`
			CheckedBy  string `json:"checked_by"`
			ErrorField string `json:"error_field"`
		} `json:"cases"`
	}
	loadVectors(t, "validation.json", &doc)
	n := 0
	for _, c := range doc.Cases {
		if c.CheckedBy != "server" || c.ErrorField == "" {
			continue
		}
		n++
		details := c.ErrorField + ": must be something else, got 'a: b'"
		var ia *InvalidArgumentError
		if !errors.As(fromRPC(status.Error(codes.InvalidArgument, details)), &ia) || ia.Field != c.ErrorField {
			t.Errorf("%s: parsed field %q from %q", c.Name, ia.Field, details)
		}
	}
	if n == 0 {
		t.Fatal("no server error cases")
	}
}
