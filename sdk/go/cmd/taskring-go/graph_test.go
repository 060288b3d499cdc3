package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	taskring "github.com/taskring/taskring/sdk/go"
	pb "github.com/taskring/taskring/sdk/go/pb/taskring/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestParseGraph(t *testing.T) {
	a, err := parseGraph([]string{"submit", "--nodes", "a:1,b:2", "--file", "g.json"})
	if err != nil || len(a.nodes) != 2 || a.file != "g.json" {
		t.Errorf("submit: %+v %v", a, err)
	}
	a, err = parseGraph([]string{"get", "--nodes", "a:1", "--namespace", "shop", "--graph-id", "order-7", "--with-results"})
	if err != nil || a.namespace != "shop" || a.graphID != "order-7" || !a.withResults {
		t.Errorf("get: %+v %v", a, err)
	}
	if a, _ = parseGraph([]string{"get", "--nodes", "a:1", "--namespace", "shop", "--graph-id", "g"}); a.withResults {
		t.Error("--with-results without the flag")
	}
	a, err = parseGraph([]string{"cancel", "--nodes", "a:1", "--namespace", "shop", "--graph-id", "order-7",
		"--mode", "immediate", "--reason", "customer left"})
	if err != nil || a.namespace != "shop" || a.graphID != "order-7" || a.mode != taskring.CancelImmediate ||
		a.reason != "customer left" {
		t.Errorf("cancel: %+v %v", a, err)
	}
	if a, err = parseGraph([]string{"cancel", "--nodes", "a:1", "--namespace", "shop", "--graph-id", "g"}); err != nil ||
		a.mode != taskring.CancelGraceful || a.reason != "" {
		t.Errorf("cancel's defaults: %+v %v", a, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "action"},
		{[]string{"draw", "--nodes", "a:1"}, "unknown action"},
		{[]string{"submit", "--file", "g.json"}, "--nodes"},
		{[]string{"submit", "--nodes", "a:1"}, "--file"},
		{[]string{"get", "--nodes", "a:1", "--namespace", "shop"}, "--graph-id"},
		{[]string{"get", "--nodes", "a:1", "--graph-id", "g"}, "--namespace"},
		{[]string{"submit", "--nodes", "a:1", "--file", "g.json", "--with-results"}, "with-results"},
		{[]string{"get", "--nodes", "a:1", "--namespace", "s", "--graph-id", "g", "extra"}, "unexpected"},
		{[]string{"cancel", "--nodes", "a:1", "--namespace", "shop"}, "--graph-id"},
		{[]string{"cancel", "--nodes", "a:1", "--graph-id", "g"}, "--namespace"},
		{[]string{"cancel", "--nodes", "a:1", "--namespace", "s", "--graph-id", "g", "--mode", "now"},
			`--mode must be graceful or immediate, got "now"`},
		{[]string{"cancel", "--nodes", "a:1", "--namespace", "s", "--graph-id", "g", "--mode", ""}, "--mode"},
		{[]string{"cancel", "--nodes", "a:1", "--namespace", "s", "--graph-id", "g", "--with-results"}, "with-results"},
	} {
		_, err := parseGraph(c.args)
		var usage *usageError
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &usage) {
			t.Errorf("%q: want a usage error about %s, got %v", c.args, c.want, err)
		}
	}
}

const orderFile = `{"namespace": "shop", "graph_id": "order-7", "tasks": [
  {"key": "charge", "task_type": "charge", "payload": {"order": 7}},
  {"key": "ship", "task_type": "ship", "after": [{"key": "charge"}]},
  {"key": "email", "task_type": "email", "payload": {"fail": true}, "after": [{"key": "charge"}]},
  {"key": "close", "task_type": "close", "after": [{"key": "ship"}, {"key": "email", "on_failure": "ignore"}],
   "join": {"rule": "all_succeeded"}}]}`

func TestReadGraphTakesTheFileAsItIs(t *testing.T) {
	g, err := readGraph([]byte(orderFile))
	if err != nil {
		t.Fatal(err)
	}
	if g.Namespace != "shop" || g.ID != "order-7" || len(g.Tasks) != 4 {
		t.Fatalf("graph %+v", g)
	}
	if p := g.Tasks[0].Spec.Payload.(json.RawMessage); string(p) != `{"order": 7}` || g.Tasks[1].Spec.Payload != nil {
		t.Errorf("payloads %v, %v", g.Tasks[0].Spec.Payload, g.Tasks[1].Spec.Payload)
	}
	closeTask := g.Tasks[3]
	if closeTask.Spec.TaskType != "close" || closeTask.Join.Rule != taskring.JoinAllSucceeded || len(closeTask.After) != 2 ||
		closeTask.After[0] != (taskring.Dependency{Key: "ship"}) ||
		closeTask.After[1] != (taskring.Dependency{Key: "email", OnFailure: taskring.OnFailureIgnore}) {
		t.Errorf("close: %+v", closeTask)
	}
	// continue is read as the other policies are; an unknown one is the SDK's to refuse when sent.
	cont, err := readGraph([]byte(strings.Replace(orderFile, `"on_failure": "ignore"`, `"on_failure": "continue"`, 1)))
	if err != nil || cont.Tasks[3].After[1] != (taskring.Dependency{Key: "email", OnFailure: taskring.OnFailureContinue}) {
		t.Errorf("continue: %+v %v", cont, err)
	}
	// A dependency on a later task is kept: the server names the cycle.
	cyclic, err := readGraph([]byte(strings.Replace(orderFile, `"payload": {"order": 7}`,
		`"payload": {"order": 7}, "after": [{"key": "close"}]`, 1)))
	if err != nil || len(cyclic.Tasks[0].After) != 1 || cyclic.Tasks[0].After[0].Key != "close" {
		t.Errorf("cyclic: %+v %v", cyclic, err)
	}
	for _, bad := range []string{`{"namespace": "shop", "tasks": [{"key": "a", "tasktype": "t"}]}`, `[1]`, `{`} {
		if _, err := readGraph([]byte(bad)); err == nil || !strings.HasPrefix(err.Error(), "the graph file: ") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func TestSubmittedJSONKeepsTheTasksInOrder(t *testing.T) {
	line, err := json.Marshal(submittedJSON(&taskring.SubmittedGraph{GraphID: "g", Tasks: []taskring.GraphTaskRef{
		{Key: "zeta", TaskID: "id-z", State: taskring.StateQueued, Slot: 3},
		{Key: "alpha", TaskID: "id-a", State: taskring.StateWaiting}}}))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"duplicate":false,"graph_id":"g","tasks":{"zeta":{"slot":3,"state":"queued","task_id":"id-z"},` +
		`"alpha":{"slot":0,"state":"waiting","task_id":"id-a"}}}`
	if string(line) != want {
		t.Errorf("printed %s\nwant    %s", line, want)
	}
}

func TestGraphJSONHasTheSharedKeys(t *testing.T) {
	line, err := json.Marshal(graphJSON(&taskring.GraphInfo{GraphID: "g", Namespace: "shop", State: "finished",
		Counts: map[string]uint32{"succeeded": 2}, Nodes: []taskring.GraphNode{
			{Key: "b", TaskID: "id-b", State: taskring.StateSucceeded, Attempts: 1, Result: json.RawMessage(`{"x":1}`)},
			{Key: "a", TaskID: "id-a", State: taskring.StateSkipped, Reason: "b failed",
				DependsOn: []taskring.GraphEdge{{ParentKey: "b", OnFailure: taskring.OnFailureIgnore, Outcome: "ignored"}}},
		}}))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(line), `"nodes":{"b":`) {
		t.Errorf("nodes out of order: %s", line)
	}
	var got struct {
		Counts map[string]int
		Nodes  map[string]map[string]any
	}
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatal(err)
	}
	b, a := got.Nodes["b"], got.Nodes["a"]
	keys := []string{"attempts", "depends_on", "reason", "result", "state", "task_id", "waiting"}
	if fmt.Sprint(sortedKeys(b)) != fmt.Sprint(keys) || fmt.Sprint(sortedKeys(a)) != fmt.Sprint(keys) {
		t.Fatalf("keys %v, %v; want %v", sortedKeys(b), sortedKeys(a), keys)
	}
	if b["result"].(map[string]any)["x"] != 1.0 || a["result"] != nil || got.Counts["succeeded"] != 2 {
		t.Errorf("b %v, a %v, counts %v", b, a, got.Counts)
	}
	if deps := b["depends_on"].([]any); len(deps) != 0 {
		t.Errorf("no edges must be [], got %v", b["depends_on"])
	}
	edge := a["depends_on"].([]any)[0].(map[string]any)
	if edge["parent_key"] != "b" || edge["on_failure"] != "ignore" || edge["outcome"] != "ignored" || a["reason"] != "b failed" {
		t.Errorf("a: %v", a)
	}
	if line, _ := json.Marshal(graphJSON(&taskring.GraphInfo{})); !strings.Contains(string(line), `"counts":{}`) {
		t.Errorf("no counts: %s", line)
	}
}

// graphNode is a GraphService on a TCP port, as the CLI dials one; it
// refuses a graph where a task depends on a later one, as the dispatcher words a cycle.
type graphNode struct {
	pb.UnimplementedGraphServiceServer
	mu   sync.Mutex
	reqs []any
}

func (n *graphNode) SubmitGraph(_ context.Context, r *pb.SubmitGraphRequest) (*pb.SubmitGraphResponse, error) {
	n.mu.Lock()
	n.reqs = append(n.reqs, r)
	n.mu.Unlock()
	if len(r.GetTasks()[0].GetDependsOn()) > 0 {
		return nil, status.Error(codes.InvalidArgument, "tasks[0].depends_on[0]: closes the cycle charge -> close -> charge")
	}
	out := &pb.SubmitGraphResponse{GraphId: r.GetGraphId()}
	for _, t := range r.GetTasks() {
		out.Tasks = append(out.Tasks, &pb.GraphTaskRef{Key: t.GetKey(), TaskId: "id-" + t.GetKey(), State: pb.TaskState_TASK_STATE_WAITING})
	}
	return out, nil
}

func (n *graphNode) GetGraph(_ context.Context, r *pb.GetGraphRequest) (*pb.GetGraphResponse, error) {
	n.mu.Lock()
	n.reqs = append(n.reqs, r)
	n.mu.Unlock()
	if r.GetGraphId() != "order-7" {
		return nil, status.Errorf(codes.NotFound, "no graph %q", r.GetGraphId())
	}
	node := &pb.GraphNode{Key: "charge", TaskId: "id-charge", State: pb.TaskState_TASK_STATE_SUCCEEDED, Attempts: 1}
	if r.GetWithResults() {
		node.ResultJson = `{"type":"charge","saw":{}}`
	}
	return &pb.GetGraphResponse{GraphId: "order-7", Namespace: r.GetNamespace(), State: "finished",
		Counts: map[string]uint32{"succeeded": 1}, Nodes: []*pb.GraphNode{node}}, nil
}

func (n *graphNode) CancelGraph(_ context.Context, r *pb.CancelGraphRequest) (*pb.CancelGraphResponse, error) {
	n.mu.Lock()
	n.reqs = append(n.reqs, r)
	n.mu.Unlock()
	if r.GetGraphId() != "order-7" {
		return nil, status.Errorf(codes.NotFound, "no graph %q", r.GetGraphId())
	}
	if r.GetMode() == pb.CancelMode_CANCEL_MODE_IMMEDIATE {
		return &pb.CancelGraphResponse{Cancelled: 3}, nil
	}
	return &pb.CancelGraphResponse{Cancelled: 2, Running: []string{"ship", "email"}}, nil
}

func serveGraphNode(t *testing.T) (*graphNode, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &graphNode{}
	srv := grpc.NewServer()
	pb.RegisterGraphServiceServer(srv, n)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return n, lis.Addr().String()
}

func TestRunGraphSubmitAndGet(t *testing.T) {
	n, addr := serveGraphNode(t)
	t.Setenv("TASKRING_TOKEN", "")
	file := filepath.Join(t.TempDir(), "graph.json")
	if err := os.WriteFile(file, []byte(orderFile), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runGraph([]string{"submit", "--nodes", addr, "--file", file}, &out); err != nil {
		t.Fatal(err)
	}
	sent := n.reqs[0].(*pb.SubmitGraphRequest)
	if sent.GetNamespace() != "shop" || sent.GetTasks()[2].GetTask().GetPayloadJson() != `{"fail":true}` ||
		sent.GetTasks()[3].GetDependsOn()[1].GetOnFailure() != pb.OnFailure_ON_FAILURE_IGNORE {
		t.Errorf("sent %v", sent)
	}
	if !strings.HasPrefix(out.String(), `{"duplicate":false,"graph_id":"order-7","tasks":{"charge":`) ||
		strings.Count(strings.TrimSpace(out.String()), "\n") != 0 {
		t.Errorf("printed %q", out.String())
	}

	out.Reset()
	if err := runGraph([]string{"get", "--nodes", addr, "--namespace", "shop", "--graph-id", "order-7", "--with-results"}, &out); err != nil {
		t.Fatal(err)
	}
	if !n.reqs[1].(*pb.GetGraphRequest).GetWithResults() || !strings.Contains(out.String(), `"result":{"type":"charge","saw":{}}`) {
		t.Errorf("get printed %q", out.String())
	}
	out.Reset()
	if err := runGraph([]string{"get", "--nodes", addr, "--namespace", "shop", "--graph-id", "order-7"}, &out); err != nil ||
		!strings.Contains(out.String(), `"result":null`) {
		t.Errorf("get without results printed %q (%v)", out.String(), err)
	}
}

func TestRunGraphRefusalNamesTheCodeAndTheField(t *testing.T) {
	_, addr := serveGraphNode(t)
	t.Setenv("TASKRING_TOKEN", "")
	file := filepath.Join(t.TempDir(), "graph.json")
	cyclic := strings.Replace(orderFile, `"payload": {"order": 7}`, `"payload": {"order": 7}, "after": [{"key": "close"}]`, 1)
	if err := os.WriteFile(file, []byte(cyclic), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := runGraph([]string{"submit", "--nodes", addr, "--file", file}, &out)
	if got, want := describe(err), "graph submit: INVALID_ARGUMENT: tasks[0].depends_on[0]: closes the cycle charge -> close -> charge"; got != want || out.Len() != 0 {
		t.Errorf("stderr line %q, want %q; printed %q", got, want, out.String())
	}
	err = runGraph([]string{"get", "--nodes", addr, "--namespace", "shop", "--graph-id", "nope"}, &out)
	if got := describe(err); got != `graph get: NOT_FOUND: no graph "nope"` {
		t.Errorf("stderr line %q", got)
	}
	if code := run([]string{"graph", "submit", "--nodes", addr, "--file", filepath.Join(t.TempDir(), "missing.json")}); code != 1 {
		t.Errorf("a missing file: exit %d, want 1", code)
	}
}

func TestRunGraphCancel(t *testing.T) {
	n, addr := serveGraphNode(t)
	t.Setenv("TASKRING_TOKEN", "")
	var out bytes.Buffer
	if err := runGraph([]string{"cancel", "--nodes", addr, "--namespace", "shop", "--graph-id", "order-7",
		"--reason", "customer left"}, &out); err != nil {
		t.Fatal(err)
	}
	sent := n.reqs[0].(*pb.CancelGraphRequest)
	if sent.GetNamespace() != "shop" || sent.GetGraphId() != "order-7" || sent.GetMode() != pb.CancelMode_CANCEL_MODE_GRACEFUL ||
		sent.GetReason() != "customer left" {
		t.Errorf("sent %v", sent)
	}
	if got := out.String(); got != `{"cancelled":2,"running":["ship","email"]}`+"\n" {
		t.Errorf("printed %q", got)
	}

	out.Reset()
	if err := runGraph([]string{"cancel", "--nodes", addr, "--namespace", "shop", "--graph-id", "order-7",
		"--mode", "immediate"}, &out); err != nil {
		t.Fatal(err)
	}
	if sent := n.reqs[1].(*pb.CancelGraphRequest); sent.GetMode() != pb.CancelMode_CANCEL_MODE_IMMEDIATE || sent.GetReason() != "" {
		t.Errorf("sent %v", sent)
	}
	if got := out.String(); got != `{"cancelled":3,"running":[]}`+"\n" {
		t.Errorf("printed %q", got)
	}

	out.Reset()
	err := runGraph([]string{"cancel", "--nodes", addr, "--namespace", "shop", "--graph-id", "nope"}, &out)
	if got := describe(err); got != `graph cancel: NOT_FOUND: no graph "nope"` || out.Len() != 0 {
		t.Errorf("stderr line %q; printed %q", got, out.String())
	}
	if code := run([]string{"graph", "cancel", "--nodes", addr, "--namespace", "shop", "--graph-id", "nope"}); code != 1 {
		t.Errorf("a refusal: exit %d, want 1", code)
	}

	// A bad --mode (or any bad graph command line) exits 2 and sends nothing.
	before := len(n.reqs)
	for _, args := range [][]string{
		{"graph", "cancel", "--nodes", addr, "--namespace", "shop", "--graph-id", "order-7", "--mode", "hard"},
		{"graph", "cancel", "--nodes", addr, "--namespace", "shop"},
	} {
		if code := run(args); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
	if len(n.reqs) != before {
		t.Errorf("a bad command line sent %d requests", len(n.reqs)-before)
	}
}

func TestGraphResultsBehaviour(t *testing.T) {
	var buf bytes.Buffer
	h, err := behavior("graph-results", &lines{out: &buf})
	if err != nil {
		t.Fatal(err)
	}
	root := &taskring.Task{TaskID: "id-charge", TaskType: "charge", Payload: json.RawMessage(`{"order":7}`), KeepResult: true}
	if err := h(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(buf.String()); got != `{"graph_run":"charge","task_id":"id-charge","parents":{}}` {
		t.Errorf("printed %q", got)
	}
	if result, _ := json.Marshal(root.Result()); string(result) != `{"saw":{},"type":"charge"}` {
		t.Errorf("result %s", result)
	}

	buf.Reset()
	child := &taskring.Task{TaskID: "id-close", TaskType: "close", Payload: json.RawMessage(`{}`), ParentResults: []taskring.ParentResult{
		{Key: "ship", Outcome: "succeeded", Result: json.RawMessage(`{"type":"ship","saw":{}}`)},
		{Key: "email", Outcome: "ignored", Error: "boom"},
	}}
	if err := h(context.Background(), child); err != nil {
		t.Fatal(err)
	}
	var run struct {
		GraphRun string `json:"graph_run"`
		TaskID   string `json:"task_id"`
		Parents  map[string]map[string]any
	}
	if err := json.Unmarshal(buf.Bytes(), &run); err != nil {
		t.Fatal(err)
	}
	if run.GraphRun != "close" || run.TaskID != "id-close" || run.Parents["ship"]["outcome"] != "succeeded" ||
		run.Parents["ship"]["result"].(map[string]any)["type"] != "ship" ||
		run.Parents["email"]["outcome"] != "ignored" || run.Parents["email"]["result"] != nil {
		t.Errorf("printed %s", buf.String())
	}
	if result, _ := json.Marshal(child.Result()); string(result) !=
		`{"saw":{"email":{"outcome":"ignored","result":null},"ship":{"outcome":"succeeded","result":{"type":"ship","saw":{}}}},"type":"close"}` {
		t.Errorf("result %s", result)
	}

	buf.Reset()
	failing := &taskring.Task{TaskID: "id-email", TaskType: "email", Payload: json.RawMessage(`{"fail":true}`)}
	var nr *taskring.NonRetryableError
	if err := h(context.Background(), failing); !errors.As(err, &nr) {
		t.Errorf("fail: %v, not a non-retryable error", err)
	}
	if !strings.HasPrefix(buf.String(), `{"graph_run":"email"`) {
		t.Errorf("a failing run printed %q: it must print its line first", buf.String())
	}
	if failing.Result() != nil {
		t.Errorf("a failing run gave a result: %v", failing.Result())
	}
}
