package main

import (
	"context"
	"encoding/json"
	"fmt"

	taskring "github.com/taskring/taskring/sdk/go"
)

// sawParent is how the graph-results behaviour saw one parent: its outcome and its result (null when none).
type sawParent struct {
	Outcome string          `json:"outcome"`
	Result  json.RawMessage `json:"result"`
}

// graphRun is the line the graph-results behaviour prints per run; graph_run
// first, so a test can pick the lines out by their start.
type graphRun struct {
	GraphRun string               `json:"graph_run"`
	TaskID   string               `json:"task_id"`
	Parents  map[string]sawParent `json:"parents"`
}

// graphResults is the graph-results behaviour: its result is {"type": <task
// type>, "saw": {key: {"outcome", "result"}}} from its parents' results; it
// prints {"graph_run", "task_id", "parents": <the same saw>} per run, then
// fails non-retryably when the payload says {"fail": true}.
func graphResults(out *lines) taskring.HandlerFunc {
	return func(_ context.Context, t *taskring.Task) error {
		var p struct {
			Fail bool `json:"fail"`
		}
		if err := t.Decode(&p); err != nil {
			return taskring.NonRetryable(fmt.Errorf("graph-results: payload: %w", err))
		}
		saw := make(map[string]sawParent, len(t.ParentResults)) // {} for a task without parents, never null
		for _, parent := range t.ParentResults {
			saw[parent.Key] = sawParent{Outcome: parent.Outcome, Result: parent.Result}
		}
		line, err := json.Marshal(graphRun{GraphRun: t.TaskType, TaskID: t.TaskID, Parents: saw})
		if err != nil {
			return taskring.NonRetryable(fmt.Errorf("graph-results: %w", err))
		}
		out.printf("%s\n", line)
		if p.Fail {
			return taskring.NonRetryable(fmt.Errorf("graph-results: the payload says fail (%s)", t.TaskID))
		}
		t.SetResult(map[string]any{"type": t.TaskType, "saw": saw})
		return nil
	}
}
