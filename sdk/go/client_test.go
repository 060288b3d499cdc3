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

// fakeNode is an in-process TaskService that records its calls and answers
// with err when set.
type fakeNode struct {
	pb.UnimplementedTaskServiceServer
	name  string
	mu    sync.Mutex
	calls []string
	err   error
	last  *pb.Task
	batch []*pb.Task
}

func (f *fakeNode) record(method string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, method)
	return f.err
}

func (f *fakeNode) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

func (f *fakeNode) Submit(_ context.Context, r *pb.SubmitRequest) (*pb.SubmitResponse, error) {
	if err := f.record("Submit"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.last = r.GetTask()
	f.mu.Unlock()
	id := r.GetTask().GetTaskId()
	if id == "" {
		id = "generated-by-" + f.name
	}
	return &pb.SubmitResponse{TaskId: id, State: pb.TaskState_TASK_STATE_ACCEPTED, DueAt: "2030-01-02T03:04:05.678Z", Slot: 7}, nil
}

func (f *fakeNode) SubmitBatch(_ context.Context, r *pb.SubmitBatchRequest) (*pb.SubmitBatchResponse, error) {
	if err := f.record("SubmitBatch"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.batch = r.GetTasks()
	f.mu.Unlock()
	out := &pb.SubmitBatchResponse{}
	for _, t := range r.GetTasks() {
		out.Results = append(out.Results, &pb.SubmitResponse{TaskId: t.GetTaskId(), State: pb.TaskState_TASK_STATE_QUEUED})
	}
	return out, nil
}

func (f *fakeNode) Cancel(_ context.Context, r *pb.CancelRequest) (*pb.CancelResponse, error) {
	if err := f.record("Cancel"); err != nil {
		return nil, err
	}
	return &pb.CancelResponse{TaskId: r.GetTaskId(), State: pb.TaskState_TASK_STATE_CANCELLED}, nil
}

func (f *fakeNode) GetTask(_ context.Context, r *pb.GetTaskRequest) (*pb.GetTaskResponse, error) {
	if err := f.record("GetTask"); err != nil {
		return nil, err
	}
	return &pb.GetTaskResponse{
		Task:  &pb.Task{TaskId: r.GetTaskId(), Namespace: "shop", TaskType: "t", PayloadJson: `{"a":1}`},
		State: pb.TaskState_TASK_STATE_RETRY_WAIT, Attempts: 1, LastError: "boom",
		Waiting: "concurrency limit per_type (at most 20 running)",
		History: []*pb.TaskEvent{{State: pb.TaskState_TASK_STATE_ACCEPTED, At: "2030-01-02T03:04:05.678Z", Node: f.name}},
	}, nil
}

// cluster starts n fake nodes on bufconn listeners and a client over all of them.
func cluster(t *testing.T, n int) ([]*fakeNode, *Client) {
	t.Helper()
	listeners := map[string]*bufconn.Listener{}
	var nodes []*fakeNode
	var addrs []string
	for i := 0; i < n; i++ {
		name := string(rune('a' + i))
		lis := bufconn.Listen(1 << 20)
		srv := grpc.NewServer()
		f := &fakeNode{name: name}
		pb.RegisterTaskServiceServer(srv, f)
		go func() { _ = srv.Serve(lis) }()
		t.Cleanup(srv.Stop)
		listeners[name] = lis
		nodes = append(nodes, f)
		addrs = append(addrs, "passthrough:///"+name)
	}
	dialer := grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
		return listeners[addr].DialContext(ctx)
	})
	c, err := NewClient(WithNodes(addrs...), WithTimeout(5*time.Second), WithDialOptions(dialer))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return nodes, c
}

func TestClientRoundRobin(t *testing.T) {
	nodes, c := cluster(t, 3)
	ctx := context.Background()
	for i := 0; i < 6; i++ {
		if _, err := c.Get(ctx, "t1"); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range nodes {
		if n.count() != 2 {
			t.Errorf("node %s got %d calls, want 2", n.name, n.count())
		}
	}
}

func TestClientTriesNextNodeOnUnavailableForIdempotentCalls(t *testing.T) {
	nodes, c := cluster(t, 2)
	nodes[0].err = status.Error(codes.Unavailable, "draining")
	ctx := context.Background()
	// The counter starts at node a, so every first try below lands on a, then b.
	if _, err := c.Get(ctx, "t1"); err != nil {
		t.Fatalf("Get: %v", err)
	}
	c.nodes.next.Store(0)
	if st, err := c.Cancel(ctx, "t1"); err != nil || st != StateCancelled {
		t.Fatalf("Cancel: %v %v", st, err)
	}
	c.nodes.next.Store(0)
	if r, err := c.Submit(ctx, TaskSpec{Namespace: "shop", TaskType: "t", TaskID: "mine"}); err != nil || r.TaskID != "mine" {
		t.Fatalf("Submit with a task id: %v %v", r, err)
	}
	if nodes[0].count() != 3 || nodes[1].count() != 3 {
		t.Errorf("calls a=%d b=%d, want 3 and 3", nodes[0].count(), nodes[1].count())
	}
}

func TestClientNeverRepeatsSubmitWithoutTaskID(t *testing.T) {
	nodes, c := cluster(t, 2)
	nodes[0].err = status.Error(codes.Unavailable, "draining")
	nodes[1].err = status.Error(codes.Unavailable, "draining")
	_, err := c.Submit(context.Background(), TaskSpec{Namespace: "shop", TaskType: "t"})
	var u *UnavailableError
	if !errors.As(err, &u) {
		t.Fatalf("want *UnavailableError, got %v", err)
	}
	if nodes[0].count()+nodes[1].count() != 1 {
		t.Errorf("submit without task id was sent %d times, want 1", nodes[0].count()+nodes[1].count())
	}
	// A batch is idempotent only when every task has an id.
	nodes[0].calls, nodes[1].calls = nil, nil
	_, _ = c.SubmitBatch(context.Background(), []TaskSpec{{Namespace: "shop", TaskType: "t", TaskID: "x"}, {Namespace: "shop", TaskType: "t"}})
	if nodes[0].count()+nodes[1].count() != 1 {
		t.Errorf("batch with an id-less task was sent %d times, want 1", nodes[0].count()+nodes[1].count())
	}
}

func TestClientDoesNotRetryOtherErrors(t *testing.T) {
	nodes, c := cluster(t, 2)
	nodes[0].err = status.Error(codes.InvalidArgument, "task.namespace: must match ^[a-z0-9][a-z0-9._-]{0,63}$, got 'Shop'")
	nodes[1].err = nodes[0].err
	_, err := c.Submit(context.Background(), TaskSpec{Namespace: "Shop", TaskType: "t", TaskID: "x"})
	var ia *InvalidArgumentError
	if !errors.As(err, &ia) || ia.Field != "task.namespace" {
		t.Fatalf("want InvalidArgument on task.namespace, got %v", err)
	}
	if nodes[0].count()+nodes[1].count() != 1 {
		t.Errorf("sent %d times, want 1", nodes[0].count()+nodes[1].count())
	}
	nodes[0].err = status.Error(codes.NotFound, "task 'x' not found")
	nodes[1].err = nodes[0].err
	if _, err := c.Get(context.Background(), "x"); !errors.As(err, new(*NotFoundError)) {
		t.Fatalf("want NotFound, got %v", err)
	}
}

func TestClientEncodesAndDecodes(t *testing.T) {
	nodes, c := cluster(t, 1)
	ctx := context.Background()
	sg := time.FixedZone("", 8*3600)
	r, err := c.Submit(ctx, TaskSpec{
		Namespace: "shop", TaskType: "cancel_order", Payload: map[string]any{"order": 42, "note": "<&>"},
		ScheduleTime: time.Date(2030, 1, 2, 11, 4, 5, 0, sg), Timeout: 1500 * time.Microsecond,
		MaxRetries: Retries(0), Priority: "HIGH", RetryPolicy: TieredRetry(time.Second, time.Minute),
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.TaskID != "generated-by-a" || r.State != StateAccepted || r.Slot != 7 || r.DueAt.UnixMilli() != 1893553445678 {
		t.Errorf("result: %+v", r)
	}
	got := nodes[0].last
	if got.GetPayloadJson() != `{"note":"<&>","order":42}` || got.GetScheduleTime() != "2030-01-02T11:04:05+08:00" ||
		got.GetTimeoutMs() != 2 || got.MaxRetries == nil || got.GetMaxRetries() != 0 ||
		got.GetPriority() != pb.Priority_PRIORITY_HIGH || len(got.GetRetryPolicy().GetScheduleMs()) != 2 {
		t.Errorf("wire task: %v", got)
	}
	info, err := c.Get(ctx, "t9")
	if err != nil {
		t.Fatal(err)
	}
	if info.State != StateRetryWait || string(info.Payload) != `{"a":1}` || len(info.History) != 1 || info.History[0].Node != "a" ||
		info.LastError != "boom" || info.Waiting != "concurrency limit per_type (at most 20 running)" {
		t.Errorf("info: %+v", info)
	}
	res, err := c.SubmitBatch(ctx, []TaskSpec{{Namespace: "shop", TaskType: "t", TaskID: "1"}, {Namespace: "shop", TaskType: "t", TaskID: "2"}})
	if err != nil || len(res) != 2 || res[1].TaskID != "2" {
		t.Errorf("batch: %v %v", res, err)
	}
}

func TestClientValidatesBeforeSending(t *testing.T) {
	nodes, c := cluster(t, 1)
	_, err := c.SubmitBatch(context.Background(), []TaskSpec{
		{Namespace: "shop", TaskType: "t"},
		{Namespace: "shop", TaskType: "t", Delay: -time.Second},
	})
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Field != "tasks[1].delay" {
		t.Fatalf("want a ValidationError on tasks[1].delay, got %v", err)
	}
	if _, err := c.Submit(context.Background(), TaskSpec{Namespace: "shop", TaskType: "t", Payload: []int{1}}); !errors.As(err, &ve) || ve.Field != "payload" {
		t.Fatalf("want a ValidationError on payload, got %v", err)
	}
	if nodes[0].count() != 0 {
		t.Errorf("%d calls were sent", nodes[0].count())
	}
}

func TestClientContextDeadline(t *testing.T) {
	_, c := cluster(t, 1)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	_, err := c.Get(ctx, "x")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want a deadline error, got %v", err)
	}
}
