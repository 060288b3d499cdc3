package taskring

import (
	"context"
	"errors"
	"sync/atomic"

	pb "github.com/taskring/taskring/sdk/go/pb/taskring/v1"
	"google.golang.org/grpc"
)

// nodes is the client's list of dispatchers: one connection per address and
// a counter, so each call goes to the next node. The round-robin is done here
// rather than by a gRPC balancer so that "try the next node" after an
// UNAVAILABLE is explicit and testable.
type nodes struct {
	addrs []string
	conns []*grpc.ClientConn
	stubs []pb.TaskServiceClient
	crons []pb.CronServiceClient   // on the same connections, so WithToken and WithTLS apply to them too
	pols  []pb.PolicyServiceClient // likewise
	graph []pb.GraphServiceClient  // likewise
	next  atomic.Uint64
}

func dialNodes(addrs []string, opts []grpc.DialOption) (*nodes, error) {
	n := &nodes{addrs: addrs}
	for _, a := range addrs {
		cc, err := grpc.NewClient(a, opts...)
		if err != nil {
			_ = n.close()
			return nil, err
		}
		n.conns = append(n.conns, cc)
		n.stubs = append(n.stubs, pb.NewTaskServiceClient(cc))
		n.crons = append(n.crons, pb.NewCronServiceClient(cc))
		n.pols = append(n.pols, pb.NewPolicyServiceClient(cc))
		n.graph = append(n.graph, pb.NewGraphServiceClient(cc))
	}
	return n, nil
}

// call runs fn on the next node. When idempotent and the node answers
// UNAVAILABLE, fn runs once more on the node after it (when there is one):
// a dispatcher that is down or draining should not fail a call another node
// can take. Non-idempotent calls are never repeated, since a second submit
// without a task_id could create a second task.
func (n *nodes) call(ctx context.Context, idempotent bool, fn func(context.Context, pb.TaskServiceClient) error) error {
	return n.try(ctx, idempotent, func(ctx context.Context, i int) error { return fn(ctx, n.stubs[i]) })
}

// callCron is call for the CronService, with the same round-robin and the same single retry.
func (n *nodes) callCron(ctx context.Context, idempotent bool, fn func(context.Context, pb.CronServiceClient) error) error {
	return n.try(ctx, idempotent, func(ctx context.Context, i int) error { return fn(ctx, n.crons[i]) })
}

// callPolicies is call for the PolicyService, with the same round-robin and the same single retry.
func (n *nodes) callPolicies(ctx context.Context, idempotent bool, fn func(context.Context, pb.PolicyServiceClient) error) error {
	return n.try(ctx, idempotent, func(ctx context.Context, i int) error { return fn(ctx, n.pols[i]) })
}

// callGraphs is call for the GraphService, with the same round-robin and the same single retry.
func (n *nodes) callGraphs(ctx context.Context, idempotent bool, fn func(context.Context, pb.GraphServiceClient) error) error {
	return n.try(ctx, idempotent, func(ctx context.Context, i int) error { return fn(ctx, n.graph[i]) })
}

// try runs fn with the index of the next node, and once more with the one
// after it on UNAVAILABLE when idempotent (see call).
func (n *nodes) try(ctx context.Context, idempotent bool, fn func(context.Context, int) error) error {
	i := int((n.next.Add(1) - 1) % uint64(len(n.conns)))
	err := fromRPC(fn(ctx, i))
	if err == nil || !idempotent || len(n.conns) < 2 || !isUnavailable(err) || ctx.Err() != nil {
		return err
	}
	return fromRPC(fn(ctx, (i+1)%len(n.conns)))
}

func (n *nodes) close() error {
	var errs []error
	for _, c := range n.conns {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
