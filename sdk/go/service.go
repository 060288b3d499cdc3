package taskring

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	pb "github.com/taskring/taskring/sdk/go/pb/taskring/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// executorService implements ExecutorService.Execute (every delivery of a
// batch runs concurrently, and the call returns once each has an outcome) and
// Work, the same on one stream per dispatcher with each outcome sent once known.
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
		outcomes[0] = s.runner.run(ctx, ds[0], received, nil)
		return &pb.ExecuteResponse{Outcomes: outcomes}, nil
	}
	var wg sync.WaitGroup
	for i, d := range ds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outcomes[i] = s.runner.run(ctx, d, received, nil)
		}()
	}
	wg.Wait()
	return &pb.ExecuteResponse{Outcomes: outcomes}, nil
}

// Work serves one dispatcher's stream: every delivery of each message starts at
// once; one sender writes the outcomes as they come, all those waiting in one
// message. A task is not held back by a slow one sent beside it, and a message
// costs both sides far less than an Execute call. The stream ends once the
// dispatcher has closed its side, or the executor stops, and every delivery it
// took has answered; if the dispatcher is gone, nobody can read an outcome, and
// what runs is cancelled through the stream's context. Heartbeats of running
// attempts go up beside the outcomes, in the order they were queued, and their
// answers come down beside the deliveries (heartbeat.go).
func (s *executorService) Work(stream pb.ExecutorService_WorkServer) error {
	ctx := stream.Context()
	done := make(chan struct{}) // closed when this handler returns
	defer close(done)
	results := make(chan upward, 1024)
	emit := func(u upward) {
		select {
		case results <- u:
		case <-done:
		}
	}
	beats := newBeatStream(s.runner.log, func(h *pb.Heartbeat) { emit(upward{heartbeat: h}) })
	var running sync.WaitGroup
	received := make(chan error, 1)
	go func() {
		for {
			req, err := stream.Recv()
			if err != nil {
				received <- err
				return
			}
			at := time.Now()
			for _, a := range req.GetHeartbeatAnswers() {
				beats.answer(a)
			}
			for _, d := range req.GetDeliveries() {
				if !s.gate.enter() {
					now := time.Now().UnixMilli()
					emit(upward{outcome: &pb.Outcome{TaskId: d.GetTask().GetTaskId(), Attempt: d.GetAttempt(),
						Kind: pb.OutcomeKind_OUTCOME_KIND_RETRYABLE_FAILURE, Error: "executor is stopping",
						StartedAtMs: now, FinishedAtMs: now}})
					continue
				}
				running.Add(1)
				go func() {
					defer running.Done()
					defer s.gate.leave()
					emit(upward{outcome: s.runner.run(ctx, d, at, beats)})
				}()
			}
		}
	}()
	var idle chan struct{} // closed once every delivery taken has answered, after the intake ended
	stopping := s.gate.closing()
	closing := func() {
		stopping = nil // a closed channel is always ready: stop selecting it
		if idle == nil {
			idle = make(chan struct{})
			go func() { running.Wait(); close(idle) }()
		}
	}
	for {
		select {
		case u := <-results:
			msg := &pb.ExecuteResponse{}
			u.addTo(msg)
		more:
			for {
				select {
				case u := <-results:
					u.addTo(msg)
				default:
					break more
				}
			}
			if err := stream.Send(msg); err != nil {
				return err
			}
		case err := <-received:
			if !errors.Is(err, io.EOF) {
				return err // the dispatcher is gone
			}
			closing()
		case <-stopping:
			closing()
		case <-idle: // nil until closing(): never ready before
			for {
				select {
				case u := <-results:
					msg := &pb.ExecuteResponse{}
					u.addTo(msg)
					if err := stream.Send(msg); err != nil {
						return err
					}
				default:
					return nil
				}
			}
		}
	}
}

// upward is one item for a Work stream's sender: an outcome or a heartbeat.
// One channel for both keeps a heartbeat ahead of the outcome that follows it.
type upward struct {
	outcome   *pb.Outcome
	heartbeat *pb.Heartbeat
}

func (u upward) addTo(msg *pb.ExecuteResponse) {
	if u.outcome != nil {
		msg.Outcomes = append(msg.Outcomes, u.outcome)
	} else {
		msg.Heartbeats = append(msg.Heartbeats, u.heartbeat)
	}
}

// gate counts Execute calls in progress and, once closed, turns new ones
// away, so Stop can wait for exactly the calls it let in.
type gate struct {
	mu       sync.Mutex
	closed   bool
	active   sync.WaitGroup
	shutting chan struct{} // closed by close(); made on first use
}

// closing is closed once the gate is: Work streams end when it is.
func (g *gate) closing() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shutting == nil {
		g.shutting = make(chan struct{})
		if g.closed {
			close(g.shutting)
		}
	}
	return g.shutting
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
	if !g.closed && g.shutting != nil {
		close(g.shutting)
	}
	g.closed = true
	g.mu.Unlock()
	done := make(chan struct{})
	go func() { g.active.Wait(); close(done) }()
	return done
}
