package taskring

import (
	"context"
	"sync"
	"time"

	pb "github.com/taskring/taskring/sdk/go/pb/taskring/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// executorService implements ExecutorService.Execute: every delivery of a
// batch runs concurrently, and the call returns once each has an outcome.
type executorService struct {
	pb.UnimplementedExecutorServiceServer
	runner *runner
	gate   *gate
}

func (s *executorService) Execute(ctx context.Context, req *pb.ExecuteRequest) (*pb.ExecuteResponse, error) {
	if !s.gate.enter() {
		// The dispatcher turns a failed call into retryable outcomes for the whole batch.
		return nil, status.Error(codes.Unavailable, "executor is stopping")
	}
	defer s.gate.leave()
	received := time.Now()
	ds := req.GetDeliveries()
	outcomes := make([]*pb.Outcome, len(ds))
	if len(ds) == 1 { // the common case needs no extra goroutine
		outcomes[0] = s.runner.run(ctx, ds[0], received)
		return &pb.ExecuteResponse{Outcomes: outcomes}, nil
	}
	var wg sync.WaitGroup
	for i, d := range ds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outcomes[i] = s.runner.run(ctx, d, received)
		}()
	}
	wg.Wait()
	return &pb.ExecuteResponse{Outcomes: outcomes}, nil
}

// gate counts Execute calls in progress and, once closed, turns new ones
// away, so Stop can wait for exactly the calls it let in.
type gate struct {
	mu     sync.Mutex
	closed bool
	active sync.WaitGroup
}

func (g *gate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.active.Add(1)
	return true
}

func (g *gate) leave() { g.active.Done() }

// close turns new calls away and returns a channel closed once the admitted ones are done.
func (g *gate) close() <-chan struct{} {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	done := make(chan struct{})
	go func() { g.active.Wait(); close(done) }()
	return done
}
