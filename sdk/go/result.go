package taskring

import (
	"encoding/json"
	"errors"
	"fmt"

	pb "github.com/taskring/taskring/sdk/go/pb/taskring/v1"
)

// Results of the tasks of a graph (Python's context.py: ParentResult,
// keeps_result, result_json_of). A handler in Go returns only an error, so
// its result is given with Task.SetResult; it is sent back
// (Outcome.result_json) only when the delivery asks for it (some task of the
// graph depends on this one), and handed to the tasks that depend on it in
// Task.ParentResults.

// maxResultBytes is the most a handler's result may take as JSON (the server refuses more).
const maxResultBytes = 65536

// ErrResultNotDelivered: the parents' results came to more than 1 MiB, and
// this one's was left out of the delivery: read it with Client.GetGraph and
// WithResults.
var ErrResultNotDelivered = errors.New("taskring: the parents' results are over 1 MiB and this one was not delivered;" +
	" read it with Client.GetGraph(ctx, namespace, graphID, taskring.WithResults())")

// ParentResult is how a task that this one depends on ended, and what its handler gave as its result.
type ParentResult struct {
	Key    string
	TaskID string
	// Outcome is "succeeded", "failed", "ignored" (failed under
	// OnFailureIgnore), "continued" (failed an attempt under
	// OnFailureContinue), "skipped" or "cancelled".
	Outcome string
	Error   string          // its last error, for one that failed
	Result  json.RawMessage // its handler's result as JSON; nil when it gave none or did not succeed
	// Truncated: the results of this task's parents came to more than 1 MiB
	// and this one's was left out of the delivery (Decode returns
	// ErrResultNotDelivered).
	Truncated bool
}

// Decode unmarshals the parent's result into v and reports whether there was
// one (false: v is left as it was). ErrResultNotDelivered when it was left out.
func (p ParentResult) Decode(v any) (bool, error) {
	if p.Truncated {
		return false, fmt.Errorf("result of %q: %w", p.Key, ErrResultNotDelivered)
	}
	if p.Result == nil {
		return false, nil
	}
	return true, json.Unmarshal(p.Result, v)
}

// ParentResult returns how the task with key, one this task depends on,
// ended, and whether it is one.
func (t *Task) ParentResult(key string) (ParentResult, bool) {
	for _, p := range t.ParentResults {
		if p.Key == key {
			return p, true
		}
	}
	return ParentResult{}, false
}

// SetResult gives the attempt's result: any value encoding/json takes
// (json.RawMessage and []byte as JSON text). When the attempt succeeds and
// t.KeepResult is set, it is sent as JSON and handed to the tasks that
// depend on this one; otherwise it is dropped, unencoded (no cost). A result
// that is not JSON, or takes more than 65,536 bytes of it, fails the attempt
// non-retryably (it would give the same again) with an error starting
// "result: ". The last call wins; nil takes the result back. Safe from
// several goroutines.
func (t *Task) SetResult(v any) {
	t.resultMu.Lock()
	defer t.resultMu.Unlock()
	t.result = v
}

// Result is the value last given with SetResult (nil when none), for a
// handler's unit tests.
func (t *Task) Result() any {
	t.resultMu.Lock()
	defer t.resultMu.Unlock()
	return t.result
}

// keptResult is the result_json of a succeeded attempt: "" when none is
// wanted or given, or why the result cannot be kept.
func (t *Task) keptResult() (text string, problem string) {
	if !t.KeepResult {
		return "", ""
	}
	return encodeResult(t.Result())
}

// encodeResult is result_json_of in Python, with the same errors.
func encodeResult(v any) (text string, problem string) {
	text, problem = compactJSONValue(v)
	if problem != "" {
		return "", "result: the handler's result is " + problem
	}
	if len(text) > maxResultBytes {
		return "", fmt.Sprintf("result: %d bytes as JSON, more than %d", len(text), maxResultBytes)
	}
	return text, ""
}

// parentResultsFromPB decodes a delivery's parent results. Only a succeeded
// parent without a result is marked Truncated on a truncated delivery: the
// others had none to leave out (as Python's GraphPart).
func parentResultsFromPB(d *pb.Delivery) ([]ParentResult, error) {
	raw := d.GetParentResults()
	if len(raw) == 0 {
		return nil, nil
	}
	out := make([]ParentResult, len(raw))
	for i, p := range raw {
		result, err := resultFromText(p.GetResultJson())
		if err != nil {
			return nil, fmt.Errorf("parent_results[%d].result_json (%q) is %w", i, p.GetKey(), err)
		}
		out[i] = ParentResult{Key: p.GetKey(), TaskID: p.GetTaskId(), Outcome: p.GetOutcome(), Error: p.GetError(),
			Result: result, Truncated: d.GetParentResultsTruncated() && result == nil && p.GetOutcome() == "succeeded"}
	}
	return out, nil
}
