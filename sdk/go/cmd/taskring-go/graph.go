package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	taskring "github.com/taskring/taskring/sdk/go"
)

// graphArgs is one `taskring-go graph ACTION` command line.
type graphArgs struct {
	action      string
	nodes       []string
	file        string              // submit
	namespace   string              // get, cancel
	graphID     string              // get, cancel
	withResults bool                // get
	mode        taskring.CancelMode // cancel
	reason      string              // cancel
	rpcTimeout  time.Duration
}

// usageError is a bad graph command line (a --mode other than graceful or
// immediate, a missing flag): run exits 2 for it, as for an unknown command,
// and nothing is sent.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// parseGraph reads the same command line as the Java and Node CLIs' `graph`
// (the contract in tests/integration/test_sdk_graphs.py). Its errors are
// *usageError (exit 2).
func parseGraph(args []string) (graphArgs, error) {
	a, err := parseGraphArgs(args)
	if err != nil {
		return graphArgs{}, &usageError{err}
	}
	return a, nil
}

func parseGraphArgs(args []string) (graphArgs, error) {
	if len(args) == 0 {
		return graphArgs{}, errors.New("graph needs an action: submit, get or cancel")
	}
	a := graphArgs{action: args[0]}
	fs := flag.NewFlagSet("graph "+a.action, flag.ContinueOnError)
	nodes := fs.String("nodes", "", "dispatcher addresses, host:port,...")
	fs.DurationVar(&a.rpcTimeout, "rpc-timeout", 10*time.Second, "bound of the call")
	switch a.action {
	case "submit":
		fs.StringVar(&a.file, "file", "", "the graph, a JSON file {namespace, graph_id, tasks}")
	case "get":
		fs.StringVar(&a.namespace, "namespace", "", "the graph's namespace")
		fs.StringVar(&a.graphID, "graph-id", "", "the graph's id")
		fs.BoolVar(&a.withResults, "with-results", false, "read each task's kept result too")
	case "cancel":
		fs.StringVar(&a.namespace, "namespace", "", "the graph's namespace")
		fs.StringVar(&a.graphID, "graph-id", "", "the graph's id")
		fs.StringVar((*string)(&a.mode), "mode", string(taskring.CancelGraceful), "graceful or immediate")
		fs.StringVar(&a.reason, "reason", "", "kept in each cancelled task's history")
	default:
		return graphArgs{}, fmt.Errorf("graph: unknown action %q (submit, get or cancel)", a.action)
	}
	if err := fs.Parse(args[1:]); err != nil {
		return graphArgs{}, err
	}
	if fs.NArg() > 0 {
		return graphArgs{}, fmt.Errorf("graph %s: unexpected argument %q", a.action, fs.Arg(0))
	}
	if *nodes == "" {
		return graphArgs{}, fmt.Errorf("graph %s needs --nodes", a.action)
	}
	a.nodes = strings.Split(*nodes, ",")
	if a.action == "submit" && a.file == "" {
		return graphArgs{}, errors.New("graph submit needs --file")
	}
	if (a.action == "get" || a.action == "cancel") && (a.namespace == "" || a.graphID == "") {
		return graphArgs{}, fmt.Errorf("graph %s needs --namespace and --graph-id", a.action)
	}
	if a.action == "cancel" && a.mode != taskring.CancelGraceful && a.mode != taskring.CancelImmediate {
		return graphArgs{}, fmt.Errorf("graph cancel: --mode must be graceful or immediate, got %q", string(a.mode))
	}
	return a, nil
}

// graphFile is the JSON of `graph submit --file`: {"namespace", "graph_id",
// "tasks": [{"key", "task_type", "payload", "after": [{"key", "on_failure"}],
// "join": {"rule", "at_least"}}]}.
type graphFile struct {
	Namespace string          `json:"namespace"`
	GraphID   string          `json:"graph_id"`
	Tasks     []graphFileTask `json:"tasks"`
}

type graphFileTask struct {
	Key      string          `json:"key"`
	TaskType string          `json:"task_type"`
	Payload  json.RawMessage `json:"payload"` // absent: {}
	After    []struct {
		Key       string `json:"key"`
		OnFailure string `json:"on_failure"` // absent: skip
	} `json:"after"`
	Join struct {
		Rule    string `json:"rule"` // absent: all_succeeded
		AtLeast uint32 `json:"at_least"`
	} `json:"join"`
}

// readGraph turns the file into a taskring.Graph as it is, without Graph.Add:
// the file is sent for the server to judge (a cycle is the server's to name),
// as the other SDKs' CLIs do. Unknown keys are refused, so a misspelt one is
// not silently left out.
func readGraph(text []byte) (*taskring.Graph, error) {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	var f graphFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("the graph file: %w", err)
	}
	g := &taskring.Graph{Namespace: f.Namespace, ID: f.GraphID, Tasks: make([]taskring.GraphTask, len(f.Tasks))}
	for i, t := range f.Tasks {
		task := taskring.GraphTask{Key: t.Key, Spec: taskring.TaskSpec{TaskType: t.TaskType},
			Join: taskring.Join{Rule: taskring.JoinRule(t.Join.Rule), AtLeast: t.Join.AtLeast}}
		if t.Payload != nil {
			task.Spec.Payload = t.Payload
		}
		for _, d := range t.After {
			task.After = append(task.After, taskring.Dependency{Key: d.Key, OnFailure: taskring.OnFailure(d.OnFailure)})
		}
		g.Tasks[i] = task
	}
	return g, nil
}

// runGraph prints one JSON line: the receipt of submit (submittedJSON), the
// graph of get (graphJSON) or what cancel did (cancelledJSON).
func runGraph(args []string, out io.Writer) error {
	a, err := parseGraph(args)
	if err != nil {
		return err
	}
	var graph *taskring.Graph
	if a.action == "submit" {
		text, err := os.ReadFile(a.file)
		if err != nil {
			return err
		}
		if graph, err = readGraph(text); err != nil {
			return err
		}
	}
	opts := append([]taskring.ClientOption{taskring.WithNodes(a.nodes...), taskring.WithTimeout(a.rpcTimeout)},
		securityFromEnv(os.Getenv)...)
	client, err := taskring.NewClient(opts...)
	if err != nil {
		return err
	}
	defer client.Close()
	var line any
	switch a.action {
	case "submit":
		var res *taskring.SubmittedGraph
		if res, err = client.SubmitGraph(context.Background(), graph); err == nil {
			line = submittedJSON(res)
		}
	case "get":
		var read []taskring.GraphReadOption
		if a.withResults {
			read = append(read, taskring.WithResults())
		}
		var info *taskring.GraphInfo
		if info, err = client.GetGraph(context.Background(), a.namespace, a.graphID, read...); err == nil {
			line = graphJSON(info)
		}
	case "cancel":
		var res *taskring.CancelledGraph
		if res, err = client.CancelGraph(context.Background(), a.namespace, a.graphID, a.mode, a.reason); err == nil {
			line = cancelledJSON(res)
		}
	}
	if err != nil {
		return fmt.Errorf("graph %s: %w", a.action, err)
	}
	text, err := json.Marshal(line)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(out, string(text))
	return err
}

// submittedJSON is {"graph_id", "duplicate", "tasks": {key: {"task_id", "state", "slot"}}}, the tasks in their order.
func submittedJSON(s *taskring.SubmittedGraph) map[string]any {
	tasks := make(orderedObject, len(s.Tasks))
	for i, t := range s.Tasks {
		tasks[i] = member{t.Key, map[string]any{"task_id": t.TaskID, "state": string(t.State), "slot": t.Slot}}
	}
	return map[string]any{"graph_id": s.GraphID, "duplicate": s.Duplicate, "tasks": tasks}
}

// cancelledJSON is {"cancelled", "running": [key, ...]}: how many tasks were
// cancelled now and the keys of the running ones left to finish.
func cancelledJSON(c *taskring.CancelledGraph) map[string]any {
	running := c.Running
	if running == nil {
		running = []string{}
	}
	return map[string]any{"cancelled": c.Cancelled, "running": running}
}

// graphJSON is {"graph_id", "namespace", "state", "counts", "nodes": {key:
// {"task_id", "state", "attempts", "reason", "waiting", "result",
// "depends_on": [{"parent_key", "on_failure", "outcome"}]}}}, the nodes in
// their order; result is null when none was kept or asked for.
func graphJSON(g *taskring.GraphInfo) map[string]any {
	nodes := make(orderedObject, len(g.Nodes))
	for i, n := range g.Nodes {
		edges := make([]map[string]any, len(n.DependsOn))
		for j, e := range n.DependsOn {
			edges[j] = map[string]any{"parent_key": e.ParentKey, "on_failure": string(e.OnFailure), "outcome": e.Outcome}
		}
		nodes[i] = member{n.Key, map[string]any{"task_id": n.TaskID, "state": string(n.State), "attempts": n.Attempts,
			"reason": n.Reason, "waiting": n.Waiting, "result": n.Result, "depends_on": edges}}
	}
	counts := g.Counts
	if counts == nil {
		counts = map[string]uint32{}
	}
	return map[string]any{"graph_id": g.GraphID, "namespace": g.Namespace, "state": g.State, "counts": counts,
		"nodes": nodes}
}

// orderedObject is a JSON object whose members keep their order (a Go map's
// would be sorted): the tasks of a graph print in the order they were added.
type orderedObject []member

type member struct {
	key   string
	value any
}

func (o orderedObject) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			buf.WriteByte(',')
		}
		key, err := json.Marshal(m.key)
		if err != nil {
			return nil, err
		}
		value, err := json.Marshal(m.value)
		if err != nil {
			return nil, err
		}
		buf.Write(key)
		buf.WriteByte(':')
		buf.Write(value)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}
