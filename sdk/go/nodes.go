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
	}
	return n, nil
}

// call runs fn on the next node. When idempotent and the node answers
// UNAVAILABLE, fn runs once more on the node after it (when there is one):
// a dispatcher that is down or draining should not fail a call another node
// can take. Non-idempotent calls are never repeated, since a second submit
// without a task_id could create a second task.
func (n *nodes) call(ctx context.Context, idempotent bool, fn func(context.Context, pb.TaskServiceClient) error) error {
	i := int((n.next.Add(1) - 1) % uint64(len(n.stubs)))
	err := fromRPC(fn(ctx, n.stubs[i]))
	if err == nil || !idempotent || len(n.stubs) < 2 || !isUnavailable(err) || ctx.Err() != nil {
		return err
	}
	j := (i + 1) % len(n.stubs)
	return fromRPC(fn(ctx, n.stubs[j]))
}

func (n *nodes) close() error {
	var errs []error
	for _, c := range n.conns {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
