package taskring

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	pb "github.com/taskring/taskring/sdk/go/pb/taskring/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
)

// orderGraph is the README's order: charge -> ship, charge -> email, then close.
func orderGraph(t *testing.T) *Graph {
	t.Helper()
	g := NewGraph("shop", "order-1042")
	for _, task := range []GraphTask{
		{Key: "charge", Spec: TaskSpec{TaskType: "charge_card", Payload: map[string]int{"order": 1042}}},
		{Key: "ship", Spec: TaskSpec{TaskType: "ship_order"}, After: []Dependency{After("charge")}},
		{Key: "email", Spec: TaskSpec{TaskType: "send_email"}, After: []Dependency{After("charge")}},
		{Key: "close", Spec: TaskSpec{TaskType: "close_order"},
			After: []Dependency{After("ship"), After("email").WithOnFailure(OnFailureIgnore)},
			Join:  Join{Rule: JoinNoneFailed}},
	} {
		if err := g.Add(task); err != nil {
			t.Fatal(err)
		}
	}
	return g
}

func TestGraphAddRefusesARepeatedKeyNamingTheField(t *testing.T) {
	g := NewGraph("shop", "g")
	_ = g.Add(GraphTask{Key: "a", Spec: TaskSpec{TaskType: "t"}})
	err := g.Add(GraphTask{Key: "a", Spec: TaskSpec{TaskType: "t"}})
	var verr *ValidationError
	if !errors.As(err, &verr) || verr.Field != "tasks[1].key" || verr.Problem != `repeats tasks[0].key "a"` {
		t.Fatalf("got %v", err)
	}
	if len(g.Tasks) != 1 {
		t.Errorf("a refused task was added: %d tasks", len(g.Tasks))
	}
}

func TestGraphAddRefusesADependencyOnATaskNotAddedBefore(t *testing.T) {
	g := NewGraph("shop", "g")
	_ = g.Add(GraphTask{Key: "a", Spec: TaskSpec{TaskType: "t"}})
	_ = g.Add(GraphTask{Key: "b", Spec: TaskSpec{TaskType: "t"}, After: []Dependency{After("a")}})
	for _, c := range []struct {
		task  GraphTask
		field string
	}{
		// Not yet added (a later task), or itself: either could close a cycle.
		{GraphTask{Key: "c", Spec: TaskSpec{TaskType: "t"}, After: []Dependency{After("a"), After("d")}}, "tasks[2].depends_on[1]"},
		{GraphTask{Key: "c", Spec: TaskSpec{TaskType: "t"}, After: []Dependency{After("c")}}, "tasks[2].depends_on[0]"},
		{GraphTask{Key: "c", Spec: TaskSpec{TaskType: "t"}, After: []Dependency{{Key: "a", OnFailure: "maybe"}}},
			"tasks[2].depends_on[0].on_failure"},
		{GraphTask{Key: "c", Spec: TaskSpec{TaskType: "t"}, Join: Join{Rule: "most"}}, "tasks[2].join.rule"},
		{GraphTask{Key: "c", Spec: TaskSpec{TaskType: "t", Delay: -time.Second}}, "tasks[2].task.delay"},
	} {
		var verr *ValidationError
		if err := g.Add(c.task); !errors.As(err, &verr) || verr.Field != c.field {
			t.Errorf("%+v: got %v, want a ValidationError on %s", c.task, err, c.field)
		}
	}
	if len(g.Tasks) != 2 {
		t.Errorf("refused tasks were added: %d tasks", len(g.Tasks))
	}
}

func TestGraphToPB(t *testing.T) {
	req, verr := graphToPB(orderGraph(t))
	if verr != nil {
		t.Fatal(verr)
	}
	if req.GetNamespace() != "shop" || req.GetGraphId() != "order-1042" || len(req.GetTasks()) != 4 {
		t.Fatalf("request %v", req)
	}
	charge, closeTask := req.GetTasks()[0], req.GetTasks()[3]
	if charge.GetKey() != "charge" || charge.GetTask().GetNamespace() != "shop" ||
		charge.GetTask().GetPayloadJson() != `{"order":1042}` || len(charge.GetDependsOn()) != 0 ||
		charge.GetJoin().GetRule() != pb.JoinRule_JOIN_RULE_ALL_SUCCEEDED {
		t.Errorf("charge: %v", charge)
	}
	deps := closeTask.GetDependsOn()
	if len(deps) != 2 || deps[0].GetKey() != "ship" || deps[0].GetOnFailure() != pb.OnFailure_ON_FAILURE_SKIP ||
		deps[1].GetKey() != "email" || deps[1].GetOnFailure() != pb.OnFailure_ON_FAILURE_IGNORE ||
		closeTask.GetJoin().GetRule() != pb.JoinRule_JOIN_RULE_NONE_FAILED {
		t.Errorf("close: %v", closeTask)
	}
	// A graph set by hand is sent as it is (the server judges order and cycles),
	// but what the wire cannot carry is refused with the request's field names.
	byHand := &Graph{Namespace: "shop", ID: "g", Tasks: []GraphTask{
		{Key: "a", Spec: TaskSpec{TaskType: "t"}, After: []Dependency{{Key: "b"}}, Join: AtLeastSucceeded(1)},
		{Key: "b", Spec: TaskSpec{TaskType: "t", Namespace: "other"}, After: []Dependency{After("a")}},
	}}
	req, verr = graphToPB(byHand)
	if verr != nil {
		t.Fatal(verr)
	}
	if a := req.GetTasks()[0]; a.GetDependsOn()[0].GetOnFailure() != pb.OnFailure_ON_FAILURE_SKIP ||
		a.GetJoin().GetRule() != pb.JoinRule_JOIN_RULE_AT_LEAST || a.GetJoin().GetAtLeast() != 1 {
		t.Errorf("a: %v", a)
	}
	if ns := req.GetTasks()[1].GetTask().GetNamespace(); ns != "other" {
		t.Errorf("a task's own namespace was replaced by %q: the server must see it to refuse it", ns)
	}
	byHand.Tasks[1].Spec.Payload = "not an object"
	if _, verr := graphToPB(byHand); verr == nil || verr.Field != "tasks[1].task.payload" {
		t.Errorf("a bad payload: %v", verr)
	}
}

func TestGraphOnFailurePolicies(t *testing.T) {
	g := NewGraph("shop", "g")
	_ = g.Add(GraphTask{Key: "charge", Spec: TaskSpec{TaskType: "t"}})
	err := g.Add(GraphTask{Key: "receipt", Spec: TaskSpec{TaskType: "t"}, After: []Dependency{
		After("charge").WithOnFailure(OnFailureContinue)}})
	if err != nil {
		t.Fatal(err)
	}
	err = g.Add(GraphTask{Key: "close", Spec: TaskSpec{TaskType: "t"}, After: []Dependency{
		After("charge"), After("receipt").WithOnFailure(OnFailureIgnore), {Key: "charge", OnFailure: "maybe"}}})
	var verr *ValidationError
	if !errors.As(err, &verr) || verr.Field != "tasks[2].depends_on[2].on_failure" ||
		verr.Problem != `must be skip, ignore or continue, got "maybe"` {
		t.Fatalf("an unknown policy: %v", err)
	}
	req, verr := graphToPB(g)
	if verr != nil {
		t.Fatal(verr)
	}
	deps := req.GetTasks()[1].GetDependsOn()
	if len(deps) != 1 || deps[0].GetOnFailure() != pb.OnFailure_ON_FAILURE_CONTINUE {
		t.Errorf("receipt: %v", req.GetTasks()[1])
	}
	// Read back: each policy is itself, UNSPECIFIED is skip as the server reads
	// it, and a policy newer than this SDK is skip too.
	for v, want := range map[pb.OnFailure]OnFailure{
		pb.OnFailure_ON_FAILURE_UNSPECIFIED: OnFailureSkip,
		pb.OnFailure_ON_FAILURE_SKIP:        OnFailureSkip,
		pb.OnFailure_ON_FAILURE_IGNORE:      OnFailureIgnore,
		pb.OnFailure_ON_FAILURE_CONTINUE:    OnFailureContinue,
		pb.OnFailure(99):                    OnFailureSkip,
	} {
		if got := onFailureFromPB(v); got != want {
			t.Errorf("%v: read %q, want %q", v, got, want)
		}
	}
}

// fakeGraphs is an in-process GraphService that records its requests and
// answers as the dispatcher does.
type fakeGraphs struct {
	pb.UnimplementedGraphServiceServer
	mu       sync.Mutex
	submits  []*pb.SubmitGraphRequest
	gets     []*pb.GetGraphRequest
	cancels  []*pb.CancelGraphRequest
	failWith error
}

func (f *fakeGraphs) SubmitGraph(_ context.Context, r *pb.SubmitGraphRequest) (*pb.SubmitGraphResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.submits = append(f.submits, r)
	if f.failWith != nil {
		return nil, f.failWith
	}
	out := &pb.SubmitGraphResponse{GraphId: r.GetGraphId(), Duplicate: len(f.submits) > 1}
	for i, t := range r.GetTasks() {
		state := pb.TaskState_TASK_STATE_WAITING
		if len(t.GetDependsOn()) == 0 {
			state = pb.TaskState_TASK_STATE_QUEUED
		}
		out.Tasks = append(out.Tasks, &pb.GraphTaskRef{Key: t.GetKey(), TaskId: "id-" + t.GetKey(), State: state, Slot: uint32(i)})
	}
	return out, nil
}

func (f *fakeGraphs) GetGraph(_ context.Context, r *pb.GetGraphRequest) (*pb.GetGraphResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets = append(f.gets, r)
	if r.GetGraphId() != "order-1042" {
		return nil, status.Errorf(codes.NotFound, "no graph %q in namespace %q", r.GetGraphId(), r.GetNamespace())
	}
	result := func(text string) string {
		if r.GetWithResults() {
			return text
		}
		return ""
	}
	return &pb.GetGraphResponse{GraphId: r.GetGraphId(), Namespace: r.GetNamespace(), State: "running",
		Counts: map[string]uint32{"succeeded": 1, "waiting": 1},
		Nodes: []*pb.GraphNode{
			{Key: "charge", TaskId: "id-charge", State: pb.TaskState_TASK_STATE_SUCCEEDED, Attempts: 1,
				ResultJson: result(`{"paid":true}`)},
			{Key: "close", TaskId: "id-close", State: pb.TaskState_TASK_STATE_WAITING,
				Join: &pb.Join{Rule: pb.JoinRule_JOIN_RULE_AT_LEAST, AtLeast: 1},
				DependsOn: []*pb.GraphEdge{{ParentKey: "charge", OnFailure: pb.OnFailure_ON_FAILURE_IGNORE, Outcome: "succeeded"},
					{ParentKey: "ship"}, {ParentKey: "receipt", OnFailure: pb.OnFailure_ON_FAILURE_CONTINUE, Outcome: "continued"}},
				Waiting: "ship"},
		}}, nil
}

func (f *fakeGraphs) CancelGraph(_ context.Context, r *pb.CancelGraphRequest) (*pb.CancelGraphResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancels = append(f.cancels, r)
	if f.failWith != nil {
		return nil, f.failWith
	}
	if r.GetGraphId() != "order-1042" {
		return nil, status.Errorf(codes.NotFound, "no graph %q in namespace %q", r.GetGraphId(), r.GetNamespace())
	}
	if r.GetMode() == pb.CancelMode_CANCEL_MODE_IMMEDIATE {
		return &pb.CancelGraphResponse{Cancelled: 3}, nil // ship heartbeats: stopped too
	}
	return &pb.CancelGraphResponse{Cancelled: 2, Running: []string{"ship"}}, nil
}

func graphCluster(t *testing.T) (*fakeGraphs, *Client) {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	f := &fakeGraphs{}
	pb.RegisterGraphServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	dialer := grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) })
	c, err := NewClient(WithNodes("passthrough:///g"), WithTimeout(5*time.Second), WithDialOptions(dialer))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return f, c
}

func TestClientSubmitGraph(t *testing.T) {
	f, c := graphCluster(t)
	ctx := context.Background()
	got, err := c.SubmitGraph(ctx, orderGraph(t))
	if err != nil {
		t.Fatal(err)
	}
	if got.GraphID != "order-1042" || got.Duplicate || len(got.Tasks) != 4 || got.Tasks[3].Key != "close" {
		t.Fatalf("submitted %+v", got)
	}
	if ship, ok := got.Task("ship"); !ok || ship.TaskID != "id-ship" || ship.State != StateWaiting || ship.Slot != 1 {
		t.Errorf("ship: %+v %v", ship, ok)
	}
	if _, ok := got.Task("nope"); ok {
		t.Error("found a task that is not in the graph")
	}
	if again, err := c.SubmitGraph(ctx, orderGraph(t)); err != nil || !again.Duplicate {
		t.Errorf("again: %+v %v", again, err)
	}

	// A local refusal sends nothing.
	bad := orderGraph(t)
	bad.Tasks[2].Join.Rule = "most"
	var verr *ValidationError
	if _, err := c.SubmitGraph(ctx, bad); !errors.As(err, &verr) || verr.Field != "tasks[2].join.rule" || len(f.submits) != 2 {
		t.Errorf("bad rule: %v (%d submits)", err, len(f.submits))
	}

	// The server's refusal is the SDK's error tree, with its field.
	f.failWith = status.Error(codes.InvalidArgument, "tasks[0].depends_on[0]: closes the cycle charge -> close -> charge")
	_, err = c.SubmitGraph(ctx, orderGraph(t))
	var inv *InvalidArgumentError
	if !errors.As(err, &inv) || inv.Field != "tasks[0].depends_on[0]" || inv.Problem != "closes the cycle charge -> close -> charge" {
		t.Errorf("refusal: %#v", err)
	}
}

func TestClientGetGraph(t *testing.T) {
	f, c := graphCluster(t)
	ctx := context.Background()
	g, err := c.GetGraph(ctx, "shop", "order-1042")
	if err != nil {
		t.Fatal(err)
	}
	if f.gets[0].GetWithResults() {
		t.Error("results asked for without WithResults")
	}
	if g.State != "running" || g.Counts["succeeded"] != 1 || len(g.Nodes) != 2 || g.Node("charge").Result != nil {
		t.Fatalf("graph %+v", g)
	}
	closeNode := g.Node("close")
	if closeNode.State != StateWaiting || closeNode.Waiting != "ship" || closeNode.Join != AtLeastSucceeded(1) ||
		len(closeNode.DependsOn) != 3 ||
		closeNode.DependsOn[0] != (GraphEdge{ParentKey: "charge", OnFailure: OnFailureIgnore, Outcome: "succeeded"}) ||
		closeNode.DependsOn[1] != (GraphEdge{ParentKey: "ship", OnFailure: OnFailureSkip}) ||
		closeNode.DependsOn[2] != (GraphEdge{ParentKey: "receipt", OnFailure: OnFailureContinue, Outcome: "continued"}) {
		t.Errorf("close: %+v", closeNode)
	}
	if g.Node("nope") != nil {
		t.Error("found a node that is not in the graph")
	}

	g, err = c.GetGraph(ctx, "shop", "order-1042", WithResults())
	if err != nil || !f.gets[1].GetWithResults() {
		t.Fatalf("with results: %v, sent %v", err, f.gets[1])
	}
	var paid struct{ Paid bool }
	if ok, err := g.Node("charge").DecodeResult(&paid); !ok || err != nil || !paid.Paid {
		t.Errorf("charge's result: %v %v %+v", ok, err, paid)
	}
	if ok, err := g.Node("close").DecodeResult(&paid); ok || err != nil {
		t.Errorf("close has no result: %v %v", ok, err)
	}

	var nf *NotFoundError
	if _, err := c.GetGraph(ctx, "shop", "other"); !errors.As(err, &nf) {
		t.Errorf("unknown graph: %v", err)
	}
}

func TestClientCancelGraph(t *testing.T) {
	f, c := graphCluster(t)
	ctx := context.Background()
	got, err := c.CancelGraph(ctx, "shop", "order-1042", CancelGraceful, "customer left")
	if err != nil {
		t.Fatal(err)
	}
	if got.Cancelled != 2 || len(got.Running) != 1 || got.Running[0] != "ship" {
		t.Errorf("graceful: %+v", got)
	}
	want := &pb.CancelGraphRequest{Namespace: "shop", GraphId: "order-1042", Mode: pb.CancelMode_CANCEL_MODE_GRACEFUL,
		Reason: "customer left"}
	if sent := f.cancels[0]; sent.GetNamespace() != want.Namespace || sent.GetGraphId() != want.GraphId ||
		sent.GetMode() != want.Mode || sent.GetReason() != want.Reason {
		t.Errorf("sent %v, want %v", sent, want)
	}

	got, err = c.CancelGraph(ctx, "shop", "order-1042", CancelImmediate, "")
	if err != nil || got.Cancelled != 3 || got.Running == nil || len(got.Running) != 0 {
		t.Errorf("immediate: %+v %v (running must be empty, not nil)", got, err)
	}
	if m := f.cancels[1].GetMode(); m != pb.CancelMode_CANCEL_MODE_IMMEDIATE || f.cancels[1].GetReason() != "" {
		t.Errorf("immediate sent %v", f.cancels[1])
	}
	// "" is graceful, as the proto's UNSPECIFIED is; it goes on the wire as GRACEFUL.
	if _, err := c.CancelGraph(ctx, "shop", "order-1042", "", ""); err != nil || f.cancels[2].GetMode() != pb.CancelMode_CANCEL_MODE_GRACEFUL {
		t.Errorf("zero mode: %v, sent %v", err, f.cancels[2])
	}

	// Another mode is refused here, naming the field; nothing is sent.
	var verr *ValidationError
	if _, err := c.CancelGraph(ctx, "shop", "order-1042", "Immediate", ""); !errors.As(err, &verr) ||
		verr.Field != "mode" || verr.Problem != `must be graceful or immediate, got "Immediate"` || len(f.cancels) != 3 {
		t.Errorf("bad mode: %v (%d cancels)", err, len(f.cancels))
	}

	// The server's refusals are the SDK's error tree.
	var nf *NotFoundError
	if _, err := c.CancelGraph(ctx, "shop", "other", CancelGraceful, ""); !errors.As(err, &nf) {
		t.Errorf("unknown graph: %v", err)
	}
	f.failWith = status.Error(codes.InvalidArgument, "reason: is 1001 characters, at most 1000")
	var inv *InvalidArgumentError
	if _, err := c.CancelGraph(ctx, "shop", "order-1042", CancelGraceful, "x"); !errors.As(err, &inv) ||
		inv.Field != "reason" || inv.Problem != "is 1001 characters, at most 1000" {
		t.Errorf("refusal: %#v", err)
	}
}

func TestGraphInfoFromPBRefusesWhatTheSDKCannotRead(t *testing.T) {
	var perr *ProtocolError
	if _, err := graphInfoFromPB(&pb.GetGraphResponse{Nodes: []*pb.GraphNode{
		{Key: "a", State: pb.TaskState_TASK_STATE_SUCCEEDED, ResultJson: "{not json"}}}); !errors.As(err, &perr) {
		t.Errorf("a result that is not JSON: %v", err)
	}
	if _, err := graphInfoFromPB(&pb.GetGraphResponse{Nodes: []*pb.GraphNode{{Key: "a", State: 99}}}); !errors.As(err, &perr) {
		t.Errorf("an unknown state: %v", err)
	}
	g, err := graphInfoFromPB(&pb.GetGraphResponse{Nodes: []*pb.GraphNode{
		{Key: "a", State: pb.TaskState_TASK_STATE_SUCCEEDED, ResultJson: "null"}}})
	if err != nil || string(g.Nodes[0].Result) != "null" || g.Counts == nil {
		t.Errorf("a null result is a result: %+v %v", g, err)
	}
}
