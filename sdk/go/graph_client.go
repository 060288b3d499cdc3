package taskring

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	pb "github.com/taskring/taskring/sdk/go/pb/taskring/v1"
)

// GraphTaskRef is one task of a submitted graph.
type GraphTaskRef struct {
	Key    string
	TaskID string // derived from the namespace, the graph id and the key
	State  TaskState
	Slot   uint32
}

// SubmittedGraph is the server's receipt for a graph.
type SubmittedGraph struct {
	GraphID   string
	Duplicate bool           // the graph existed with the same tasks: nothing was written
	Tasks     []GraphTaskRef // in the order they were added
}

// Task returns the task with key, and whether there is one.
func (s *SubmittedGraph) Task(key string) (GraphTaskRef, bool) {
	for _, t := range s.Tasks {
		if t.Key == key {
			return t, true
		}
	}
	return GraphTaskRef{}, false
}

// GraphEdge is one dependency of a task, as the server sees it now.
type GraphEdge struct {
	ParentKey string
	OnFailure OnFailure
	// Outcome is how the parent ended for this edge: succeeded, failed,
	// ignored (failed under OnFailureIgnore), continued (failed an attempt
	// under OnFailureContinue), skipped, cancelled; "" while it has not.
	Outcome string
}

// GraphNode is one task of a graph as it stands (Client.GetGraph).
type GraphNode struct {
	Key       string
	TaskID    string
	State     TaskState
	Attempts  uint32
	Join      Join
	DependsOn []GraphEdge
	Reason    string // why it was skipped or cancelled, or its last error
	Waiting   string // what a waiting task waits for, in words
	// Result is its handler's kept result as JSON (see Task.SetResult), read
	// with WithResults; nil when none was kept or asked for.
	Result json.RawMessage
}

// DecodeResult unmarshals Result into v and reports whether there was one
// (false: v is left as it was).
func (n *GraphNode) DecodeResult(v any) (bool, error) {
	if n.Result == nil {
		return false, nil
	}
	return true, json.Unmarshal(n.Result, v)
}

// GraphInfo is a graph as it stands.
type GraphInfo struct {
	GraphID   string
	Namespace string
	// State is "running" while any task has not ended, "finished" once all
	// have ("incomplete" while the graph's tasks are being written).
	State  string
	Counts map[string]uint32 // tasks by state name
	Nodes  []GraphNode       // in the order they were added
}

// Node returns the task with key, or nil.
func (g *GraphInfo) Node(key string) *GraphNode {
	for i := range g.Nodes {
		if g.Nodes[i].Key == key {
			return &g.Nodes[i]
		}
	}
	return nil
}

// CancelMode is how Client.CancelGraph treats the graph's running tasks.
type CancelMode string

const (
	// CancelGraceful (also what "" means): running tasks finish (a failed
	// one is not retried); nothing new starts.
	CancelGraceful CancelMode = "graceful"
	// CancelImmediate: running tasks of types that heartbeat are told to stop
	// at their next heartbeat too; the others finish as in CancelGraceful.
	CancelImmediate CancelMode = "immediate"
)

var cancelModeToPB = map[CancelMode]pb.CancelMode{
	"":              pb.CancelMode_CANCEL_MODE_GRACEFUL,
	CancelGraceful:  pb.CancelMode_CANCEL_MODE_GRACEFUL,
	CancelImmediate: pb.CancelMode_CANCEL_MODE_IMMEDIATE,
}

// CancelledGraph is what Client.CancelGraph did.
type CancelledGraph struct {
	Cancelled uint32   // tasks cancelled now
	Running   []string // keys of the tasks left to finish (graceful, or types without heartbeats)
}

// GraphReadOption is an option of Client.GetGraph.
type GraphReadOption func(*pb.GetGraphRequest)

// WithResults asks GetGraph for each task's kept result (GraphNode.Result),
// which it otherwise leaves out: results can be large.
func WithResults() GraphReadOption {
	return func(r *pb.GetGraphRequest) { r.WithResults = true }
}

// SubmitGraph submits a graph of tasks in one call. The server validates it
// whole before writing anything and refuses it with an *InvalidArgumentError
// naming the field ("tasks[3].depends_on[0]"); what the wire cannot carry is
// a *ValidationError and nothing is sent. A retried submit with the same
// graph id and tasks answers the graph as it stands (Duplicate), so the call
// is tried on a second node after UNAVAILABLE.
func (c *Client) SubmitGraph(ctx context.Context, g *Graph) (*SubmittedGraph, error) {
	req, verr := graphToPB(g)
	if verr != nil {
		return nil, verr
	}
	if traceparent := currentTraceparent(ctx); traceparent != "" { // as Submit: the tasks go on with the trace
		for _, t := range req.Tasks {
			if t.Task.TraceId == "" {
				t.Task.TraceId = traceparent
			}
		}
	}
	ctx, cancel := c.timeout.bound(ctx)
	defer cancel()
	var resp *pb.SubmitGraphResponse
	err := c.nodes.callGraphs(ctx, true, func(ctx context.Context, s pb.GraphServiceClient) (err error) {
		resp, err = s.SubmitGraph(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	return submittedGraphFromPB(resp)
}

// GetGraph returns the graph: each task's state, its edges and what a
// waiting one waits for; with WithResults, each task's kept result. An
// unknown graph is a *NotFoundError.
func (c *Client) GetGraph(ctx context.Context, namespace, graphID string, opts ...GraphReadOption) (*GraphInfo, error) {
	req := &pb.GetGraphRequest{Namespace: namespace, GraphId: graphID}
	for _, o := range opts {
		o(req)
	}
	ctx, cancel := c.timeout.bound(ctx)
	defer cancel()
	var resp *pb.GetGraphResponse
	err := c.nodes.callGraphs(ctx, true, func(ctx context.Context, s pb.GraphServiceClient) (err error) {
		resp, err = s.GetGraph(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	return graphInfoFromPB(resp)
}

// CancelGraph cancels every task of the graph that has not ended. With
// CancelGraceful ("" too) running tasks finish (a failed one is not retried)
// and nothing new starts; with CancelImmediate running tasks of types that
// heartbeat are told to stop too. reason ("" for the server's) is kept in
// each cancelled task's history. Another mode is a *ValidationError on
// "mode" and nothing is sent; an unknown graph is a *NotFoundError. A
// repeated cancel cancels nothing more, so the call is tried on a second
// node after UNAVAILABLE.
func (c *Client) CancelGraph(ctx context.Context, namespace, graphID string, mode CancelMode, reason string) (*CancelledGraph, error) {
	wire, ok := cancelModeToPB[mode]
	if !ok {
		return nil, invalid("mode", "must be graceful or immediate, got %q", string(mode))
	}
	req := &pb.CancelGraphRequest{Namespace: namespace, GraphId: graphID, Mode: wire, Reason: reason}
	ctx, cancel := c.timeout.bound(ctx)
	defer cancel()
	var resp *pb.CancelGraphResponse
	err := c.nodes.callGraphs(ctx, true, func(ctx context.Context, s pb.GraphServiceClient) (err error) {
		resp, err = s.CancelGraph(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	running := resp.GetRunning()
	if running == nil {
		running = []string{}
	}
	return &CancelledGraph{Cancelled: resp.GetCancelled(), Running: running}, nil
}

func submittedGraphFromPB(m *pb.SubmitGraphResponse) (*SubmittedGraph, error) {
	out := &SubmittedGraph{GraphID: m.GetGraphId(), Duplicate: m.GetDuplicate(), Tasks: make([]GraphTaskRef, len(m.GetTasks()))}
	for i, t := range m.GetTasks() {
		state, err := stateFromPB(t.GetState())
		if err != nil {
			return nil, err
		}
		out.Tasks[i] = GraphTaskRef{Key: t.GetKey(), TaskID: t.GetTaskId(), State: state, Slot: t.GetSlot()}
	}
	return out, nil
}

func graphInfoFromPB(m *pb.GetGraphResponse) (*GraphInfo, error) {
	out := &GraphInfo{GraphID: m.GetGraphId(), Namespace: m.GetNamespace(), State: m.GetState(),
		Counts: make(map[string]uint32, len(m.GetCounts())), Nodes: make([]GraphNode, len(m.GetNodes()))}
	for k, v := range m.GetCounts() {
		out.Counts[k] = v
	}
	for i, n := range m.GetNodes() {
		state, err := stateFromPB(n.GetState())
		if err != nil {
			return nil, err
		}
		result, err := resultFromText(n.GetResultJson())
		if err != nil {
			return nil, &ProtocolError{Msg: fmt.Sprintf("graph node %q result_json is %v", n.GetKey(), err)}
		}
		node := GraphNode{Key: n.GetKey(), TaskID: n.GetTaskId(), State: state, Attempts: n.GetAttempts(),
			Join:   Join{Rule: joinRuleFromPB(n.GetJoin().GetRule()), AtLeast: n.GetJoin().GetAtLeast()},
			Reason: n.GetReason(), Waiting: n.GetWaiting(), Result: result,
			DependsOn: make([]GraphEdge, len(n.GetDependsOn()))}
		for j, e := range n.GetDependsOn() {
			node.DependsOn[j] = GraphEdge{ParentKey: e.GetParentKey(), OnFailure: onFailureFromPB(e.GetOnFailure()),
				Outcome: e.GetOutcome()}
		}
		out.Nodes[i] = node
	}
	return out, nil
}

// resultFromText is a result_json from the wire: nil for "", else it must be JSON.
func resultFromText(text string) (json.RawMessage, error) {
	if text == "" {
		return nil, nil
	}
	if !json.Valid([]byte(text)) {
		return nil, errors.New("not valid JSON")
	}
	return json.RawMessage(text), nil
}
