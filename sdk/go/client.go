package taskring

import (
	"context"
	"errors"
	"strconv"

	pb "github.com/taskring/taskring/sdk/go/pb/taskring/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Client submits, cancels and looks up tasks. Safe for concurrent use; share one per process.
type Client struct {
	nodes   *nodes
	timeout rpcTimeout
}

// NewClient connects (lazily) to the dispatchers given with WithNodes.
func NewClient(opts ...ClientOption) (*Client, error) {
	cfg := clientConfig{timeout: defaultRPCTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	if len(cfg.nodes) == 0 {
		return nil, errors.New("taskring: NewClient needs at least one node (WithNodes)")
	}
	security, err := securityOptions(&cfg)
	if err != nil {
		return nil, err
	}
	dial := []grpc.DialOption{
		// First, so WithTLS or a WithDialOptions(grpc.WithTransportCredentials(tls)) overrides it.
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageBytes), grpc.MaxCallSendMsgSize(maxMessageBytes)),
	}
	dial = append(dial, security...)
	n, err := dialNodes(cfg.nodes, append(dial, cfg.dial...))
	if err != nil {
		return nil, err
	}
	return &Client{nodes: n, timeout: rpcTimeout(cfg.timeout)}, nil
}

// Close closes the connections.
func (c *Client) Close() error { return c.nodes.close() }

// Submit submits one task. It is tried on a second node after UNAVAILABLE
// only when spec.TaskID is set, because the server is idempotent by task id.
func (c *Client) Submit(ctx context.Context, spec TaskSpec) (SubmitResult, error) {
	task, verr := specToPB(&spec)
	if verr != nil {
		return SubmitResult{}, verr
	}
	if task.TraceId == "" { // inside a traced request: the task goes on with its trace (tracing.go)
		task.TraceId = currentTraceparent(ctx)
	}
	ctx, cancel := c.timeout.bound(ctx)
	defer cancel()
	var resp *pb.SubmitResponse
	err := c.nodes.call(ctx, spec.TaskID != "", func(ctx context.Context, s pb.TaskServiceClient) (err error) {
		resp, err = s.Submit(ctx, &pb.SubmitRequest{Task: task})
		return err
	})
	if err != nil {
		return SubmitResult{}, err
	}
	return submitResultFromPB(resp)
}

// SubmitBatch submits many tasks in one call; results are in the order of
// specs. The server validates the whole batch before writing any of it, so an
// *InvalidArgumentError (Field "tasks[i]....") means nothing was written.
func (c *Client) SubmitBatch(ctx context.Context, specs []TaskSpec) ([]SubmitResult, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	tasks := make([]*pb.Task, len(specs))
	idempotent := true
	traceparent := currentTraceparent(ctx) // "" outside a traced request (tracing.go)
	for i := range specs {
		t, verr := specToPB(&specs[i])
		if verr != nil {
			verr.Field = "tasks[" + strconv.Itoa(i) + "]." + verr.Field
			return nil, verr
		}
		if t.TraceId == "" {
			t.TraceId = traceparent
		}
		tasks[i] = t
		idempotent = idempotent && specs[i].TaskID != ""
	}
	ctx, cancel := c.timeout.bound(ctx)
	defer cancel()
	var resp *pb.SubmitBatchResponse
	err := c.nodes.call(ctx, idempotent, func(ctx context.Context, s pb.TaskServiceClient) (err error) {
		resp, err = s.SubmitBatch(ctx, &pb.SubmitBatchRequest{Tasks: tasks})
		return err
	})
	if err != nil {
		return nil, err
	}
	return batchResults(len(specs), resp)
}

// Cancel cancels a task that has not finished and returns its state
// (StateCancelled). *NotFoundError for an unknown id, *FailedPreconditionError
// when it is past the point where it can be stopped.
func (c *Client) Cancel(ctx context.Context, taskID string) (TaskState, error) {
	ctx, cancel := c.timeout.bound(ctx)
	defer cancel()
	var resp *pb.CancelResponse
	err := c.nodes.call(ctx, true, func(ctx context.Context, s pb.TaskServiceClient) (err error) {
		resp, err = s.Cancel(ctx, &pb.CancelRequest{TaskId: taskID})
		return err
	})
	if err != nil {
		return "", err
	}
	return stateFromPB(resp.GetState())
}

// Get returns the task as stored: state, attempts, last error and history.
func (c *Client) Get(ctx context.Context, taskID string) (*TaskInfo, error) {
	ctx, cancel := c.timeout.bound(ctx)
	defer cancel()
	var resp *pb.GetTaskResponse
	err := c.nodes.call(ctx, true, func(ctx context.Context, s pb.TaskServiceClient) (err error) {
		resp, err = s.GetTask(ctx, &pb.GetTaskRequest{TaskId: taskID})
		return err
	})
	if err != nil {
		return nil, err
	}
	return taskInfoFromPB(resp)
}
