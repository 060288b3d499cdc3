package taskring

import (
	"context"
	"time"
)

// rpcTimeout is the client's bound on one call; the context's own deadline wins when sooner.
type rpcTimeout time.Duration

func (t rpcTimeout) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if t <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, time.Duration(t))
}
