package taskring

import (
	"context"

	pb "github.com/taskring/taskring/sdk/go/pb/taskring/v1"
	"google.golang.org/grpc"
)

// CronRules is the CronService over a client's connections (Python's
// Client.cron): the same nodes, token, TLS and per-call timeout as Submit.
// Failures are the client's error types: *AlreadyExistsError (Create of a
// taken name), *NotFoundError (no such rule), *InvalidArgumentError with
// Field "rule.<field>" (a bad rule; nothing was written), and so on.
type CronRules struct{ c *Client }

// Cron returns the client's cron rules.
func (c *Client) Cron() *CronRules { return &CronRules{c: c} }

// Create stores a new rule and returns it as stored. Not repeated on another
// node after UNAVAILABLE: if the first node did write it, the retry would
// answer ALREADY_EXISTS for the caller's own rule.
func (r *CronRules) Create(ctx context.Context, spec CronRuleSpec) (*CronRule, error) {
	return r.put(ctx, spec, false, pb.CronServiceClient.CreateCronRule)
}

// Update replaces the whole rule (a field left zero takes the server's
// default again); its fires not yet started are cancelled and it is planned
// again from now. The task type cannot change. Safe to repeat, so it is tried
// on the next node after UNAVAILABLE.
func (r *CronRules) Update(ctx context.Context, spec CronRuleSpec) (*CronRule, error) {
	return r.put(ctx, spec, true, pb.CronServiceClient.UpdateCronRule)
}

// Get returns the rule with its next and last fires.
func (r *CronRules) Get(ctx context.Context, namespace, name string) (*CronRule, error) {
	return r.ref(ctx, namespace, name, true, pb.CronServiceClient.GetCronRule)
}

// List returns every rule of namespace ("" = all), by namespace and name.
func (r *CronRules) List(ctx context.Context, namespace string) ([]*CronRule, error) {
	ctx, cancel := r.c.timeout.bound(ctx)
	defer cancel()
	var resp *pb.ListCronRulesResponse
	err := r.c.nodes.callCron(ctx, true, func(ctx context.Context, s pb.CronServiceClient) (err error) {
		resp, err = s.ListCronRules(ctx, &pb.ListCronRulesRequest{Namespace: namespace})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]*CronRule, 0, len(resp.GetRules()))
	for _, m := range resp.GetRules() {
		rule, err := cronRuleFromPB(m)
		if err != nil {
			return nil, err
		}
		out = append(out, rule)
	}
	return out, nil
}

// Pause stops the rule firing; its fires not yet started are cancelled.
func (r *CronRules) Pause(ctx context.Context, namespace, name string) (*CronRule, error) {
	return r.ref(ctx, namespace, name, true, pb.CronServiceClient.PauseCronRule)
}

// Resume fires the rule again from now on (what fell due while paused is not caught up).
func (r *CronRules) Resume(ctx context.Context, namespace, name string) (*CronRule, error) {
	return r.ref(ctx, namespace, name, true, pb.CronServiceClient.ResumeCronRule)
}

// Delete removes the rule (its fires not yet started are cancelled) and
// returns it as it was. Not repeated after UNAVAILABLE: a retry of a delete
// that was applied would answer NOT_FOUND.
func (r *CronRules) Delete(ctx context.Context, namespace, name string) (*CronRule, error) {
	return r.ref(ctx, namespace, name, false, pb.CronServiceClient.DeleteCronRule)
}

type putMethod = func(pb.CronServiceClient, context.Context, *pb.PutCronRuleRequest, ...grpc.CallOption) (*pb.PutCronRuleResponse, error)

func (r *CronRules) put(ctx context.Context, spec CronRuleSpec, idempotent bool, method putMethod) (*CronRule, error) {
	rule, verr := cronSpecToPB(&spec)
	if verr != nil {
		return nil, verr
	}
	ctx, cancel := r.c.timeout.bound(ctx)
	defer cancel()
	var resp *pb.PutCronRuleResponse
	err := r.c.nodes.callCron(ctx, idempotent, func(ctx context.Context, s pb.CronServiceClient) (err error) {
		resp, err = method(s, ctx, &pb.PutCronRuleRequest{Rule: rule})
		return err
	})
	if err != nil {
		return nil, err
	}
	return cronRuleFromPB(resp.GetRule())
}

type refMethod = func(pb.CronServiceClient, context.Context, *pb.CronRuleRef, ...grpc.CallOption) (*pb.CronRule, error)

func (r *CronRules) ref(ctx context.Context, namespace, name string, idempotent bool, method refMethod) (*CronRule, error) {
	ctx, cancel := r.c.timeout.bound(ctx)
	defer cancel()
	var resp *pb.CronRule
	err := r.c.nodes.callCron(ctx, idempotent, func(ctx context.Context, s pb.CronServiceClient) (err error) {
		resp, err = method(s, ctx, &pb.CronRuleRef{Namespace: namespace, Name: name})
		return err
	})
	if err != nil {
		return nil, err
	}
	return cronRuleFromPB(resp)
}
