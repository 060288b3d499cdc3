package taskring

import (
	"fmt"
	"strconv"

	pb "github.com/taskring/taskring/sdk/go/pb/taskring/v1"
)

// Graphs: tasks that depend on other tasks, submitted in one call
// (docs/graphs.md; Python's taskring.graph).
//
// A task runs when its join rule is met by the ends of the tasks it comes
// after, and is skipped (with the reason) when the rule can no longer be
// met; a skip travels on to the tasks after it. Every task of a graph ends:
// succeeded, dead-lettered, skipped or cancelled.
//
// Graph.Add checks what needs no server, as Python's Graph.task does: a key
// is not repeated, and a task comes only after tasks added before it, so a
// graph built with Add has no cycle. The server checks everything again and
// names the field of what it refuses ("tasks[3].depends_on[0]: ..."). A
// Graph whose Tasks are set directly is sent as it is, for the server to
// judge (as a TaskSpec's name syntax and sizes are).

// OnFailure is what the failure (dead letter, or with OnFailureContinue a
// failed attempt) of a task means to one task after it.
type OnFailure string

const (
	// OnFailureSkip (also what "" means): counts as failed; the join rule
	// decides (the default rule then skips the task).
	OnFailureSkip OnFailure = "skip"
	// OnFailureIgnore: counts as done, as if it had succeeded without a
	// result; recorded on the edge ("ignored").
	OnFailureIgnore OnFailure = "ignore"
	// OnFailureContinue: the parent's first failed attempt lets the task go
	// at once, as done ("continued"), without waiting for its retries; a
	// success before any failure counts as a success.
	OnFailureContinue OnFailure = "continue"
)

var onFailureToPB = map[OnFailure]pb.OnFailure{
	"":                pb.OnFailure_ON_FAILURE_SKIP,
	OnFailureSkip:     pb.OnFailure_ON_FAILURE_SKIP,
	OnFailureIgnore:   pb.OnFailure_ON_FAILURE_IGNORE,
	OnFailureContinue: pb.OnFailure_ON_FAILURE_CONTINUE,
}

// onFailureFromPB reads UNSPECIFIED as skip, as the server does (and a policy
// newer than this SDK as skip too, as Python does).
func onFailureFromPB(v pb.OnFailure) OnFailure {
	switch v {
	case pb.OnFailure_ON_FAILURE_IGNORE:
		return OnFailureIgnore
	case pb.OnFailure_ON_FAILURE_CONTINUE:
		return OnFailureContinue
	}
	return OnFailureSkip
}

// JoinRule is when a task becomes due, from the ends of the tasks it comes after.
type JoinRule string

const (
	// JoinAllSucceeded (also what "" means): every parent succeeded (a
	// failure under OnFailureIgnore counts as done).
	JoinAllSucceeded JoinRule = "all_succeeded"
	JoinAllDone      JoinRule = "all_done"      // every parent ended, whatever its end
	JoinNoneFailed   JoinRule = "none_failed"   // every parent ended and none failed (a skipped one is fine)
	JoinAnySucceeded JoinRule = "any_succeeded" // one parent succeeded
	JoinAtLeast      JoinRule = "at_least"      // Join.AtLeast parents succeeded
)

var joinRuleToPB = map[JoinRule]pb.JoinRule{
	"":               pb.JoinRule_JOIN_RULE_ALL_SUCCEEDED,
	JoinAllSucceeded: pb.JoinRule_JOIN_RULE_ALL_SUCCEEDED,
	JoinAllDone:      pb.JoinRule_JOIN_RULE_ALL_DONE,
	JoinNoneFailed:   pb.JoinRule_JOIN_RULE_NONE_FAILED,
	JoinAnySucceeded: pb.JoinRule_JOIN_RULE_ANY_SUCCEEDED,
	JoinAtLeast:      pb.JoinRule_JOIN_RULE_AT_LEAST,
}

// joinRuleFromPB reads UNSPECIFIED (and a rule newer than this SDK) as all_succeeded, as Python does.
func joinRuleFromPB(v pb.JoinRule) JoinRule {
	for rule, p := range joinRuleToPB {
		if p == v && rule != "" {
			return rule
		}
	}
	return JoinAllSucceeded
}

// Join is a task's join rule; the zero Join is all_succeeded.
type Join struct {
	Rule    JoinRule
	AtLeast uint32 // JoinAtLeast only: 1..the number of parents
}

// AtLeastSucceeded is the join "at least k parents succeeded".
func AtLeastSucceeded(k uint32) Join { return Join{Rule: JoinAtLeast, AtLeast: k} }

// Dependency is one task a task comes after, and what its failure means there.
type Dependency struct {
	Key       string    // the key of a task of the same graph
	OnFailure OnFailure // "" is OnFailureSkip
}

// After is a dependency on the task with key; its failure skips (OnFailureSkip).
func After(key string) Dependency { return Dependency{Key: key, OnFailure: OnFailureSkip} }

// WithOnFailure is the same dependency with another failure policy:
// After("email").WithOnFailure(taskring.OnFailureIgnore).
func (d Dependency) WithOnFailure(p OnFailure) Dependency {
	d.OnFailure = p
	return d
}

// GraphTask is one task of a graph.
type GraphTask struct {
	Key string // unique in the graph: [A-Za-z0-9][A-Za-z0-9._:-]{0,127}
	// Spec is the task. Its Namespace may be left "" (the graph's); TaskID,
	// UniqueKey and ScheduleTime are not allowed in a graph (the server
	// refuses them: a task's id is derived from the graph id and its key,
	// and its Delay counts from when it is released).
	Spec  TaskSpec
	After []Dependency // tasks of the same graph it comes after
	Join  Join         // zero: all_succeeded
}

// Graph is a graph of tasks of one namespace, to submit with Client.SubmitGraph.
type Graph struct {
	Namespace string
	ID        string // the caller's: a retried submit of the same graph is a duplicate
	Tasks     []GraphTask
}

// NewGraph is an empty graph; add its tasks with Add.
func NewGraph(namespace, id string) *Graph { return &Graph{Namespace: namespace, ID: id} }

// Add appends t after checking what needs no server: t.Key is not the key of
// a task added before (Field "tasks[i].key"), each dependency names a task
// added before this one (Field "tasks[i].depends_on[j]"), and its failure
// policy and join rule are known. A refused task is not added (a
// *ValidationError, nothing changes).
func (g *Graph) Add(t GraphTask) error {
	i := len(g.Tasks)
	for k, earlier := range g.Tasks {
		if earlier.Key == t.Key {
			return invalid(fmt.Sprintf("tasks[%d].key", i), "repeats tasks[%d].key %q", k, t.Key)
		}
	}
	for j, d := range t.After {
		if !g.has(d.Key) {
			return invalid(fmt.Sprintf("tasks[%d].depends_on[%d]", i, j), "names %q, which is no task added before this one", d.Key)
		}
	}
	if _, verr := graphTaskToPB(&t, g.Namespace, i); verr != nil {
		return verr
	}
	g.Tasks = append(g.Tasks, t)
	return nil
}

func (g *Graph) has(key string) bool {
	for _, t := range g.Tasks {
		if t.Key == key {
			return true
		}
	}
	return false
}

// graphToPB builds SubmitGraphRequest, refusing only what the wire cannot
// carry (a TaskSpec's checks, an unknown failure policy or join rule), named
// by the request's field; keys, order and cycles are the server's to judge.
func graphToPB(g *Graph) (*pb.SubmitGraphRequest, *ValidationError) {
	req := &pb.SubmitGraphRequest{Namespace: g.Namespace, GraphId: g.ID, Tasks: make([]*pb.GraphTask, len(g.Tasks))}
	for i := range g.Tasks {
		t, verr := graphTaskToPB(&g.Tasks[i], g.Namespace, i)
		if verr != nil {
			return nil, verr
		}
		req.Tasks[i] = t
	}
	return req, nil
}

func graphTaskToPB(t *GraphTask, namespace string, i int) (*pb.GraphTask, *ValidationError) {
	prefix := "tasks[" + strconv.Itoa(i) + "]."
	spec := t.Spec
	if spec.Namespace == "" {
		spec.Namespace = namespace
	}
	task, verr := specToPB(&spec)
	if verr != nil {
		verr.Field = prefix + "task." + verr.Field
		return nil, verr
	}
	out := &pb.GraphTask{Key: t.Key, Task: task, DependsOn: make([]*pb.Dependency, len(t.After))}
	for j, d := range t.After {
		policy, ok := onFailureToPB[d.OnFailure]
		if !ok {
			return nil, invalid(fmt.Sprintf("%sdepends_on[%d].on_failure", prefix, j),
				"must be skip, ignore or continue, got %q", string(d.OnFailure))
		}
		out.DependsOn[j] = &pb.Dependency{Key: d.Key, OnFailure: policy}
	}
	rule, ok := joinRuleToPB[t.Join.Rule]
	if !ok {
		return nil, invalid(prefix+"join.rule",
			"must be all_succeeded, all_done, none_failed, any_succeeded or at_least, got %q", string(t.Join.Rule))
	}
	out.Join = &pb.Join{Rule: rule, AtLeast: t.Join.AtLeast}
	return out, nil
}
