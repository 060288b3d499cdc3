package taskring

import (
	"context"
	"encoding/json"

	pb "github.com/taskring/taskring/sdk/go/pb/taskring/v1"
	"google.golang.org/protobuf/proto"
)

// Policies is the PolicyService over a client's connections (Python's
// Client.policies): the same nodes, token, TLS and per-call timeout as Submit.
// Get and List need the token's `read` call, Put and Delete its
// `policy_write` call, in the namespace. Failures are the client's error
// types: *InvalidArgumentError with Field "policy_json.<field>" (the server
// validates the policy whole; nothing was written) or "reason" (an empty
// reason), *FailedPreconditionError (ifRevision is not the entry's revision),
// *NotFoundError (Delete of a type with no API entry), *PermissionDeniedError,
// and so on.
type Policies struct{ c *Client }

// Policies returns the client's per-type policies.
func (c *Client) Policies() *Policies { return &Policies{c: c} }

// Get returns the type's entry in effect. It never fails for a valid
// namespace and type: a type with no entry anywhere answers Source "none"
// and Policy {}.
func (p *Policies) Get(ctx context.Context, namespace, taskType string) (*TypePolicy, error) {
	ctx, cancel := p.c.timeout.bound(ctx)
	defer cancel()
	var resp *pb.TypePolicy
	err := p.c.nodes.callPolicies(ctx, true, func(ctx context.Context, s pb.PolicyServiceClient) (err error) {
		resp, err = s.GetTypePolicy(ctx, &pb.TypePolicyRef{Namespace: namespace, TaskType: taskType})
		return err
	})
	if err != nil {
		return nil, err
	}
	return typePolicyFromPB(resp)
}

// List returns every type with an entry (in the file or through the API) of
// namespace ("" = all), by namespace then type.
func (p *Policies) List(ctx context.Context, namespace string) ([]*TypePolicy, error) {
	ctx, cancel := p.c.timeout.bound(ctx)
	defer cancel()
	var resp *pb.ListTypePoliciesResponse
	err := p.c.nodes.callPolicies(ctx, true, func(ctx context.Context, s pb.PolicyServiceClient) (err error) {
		resp, err = s.ListTypePolicies(ctx, &pb.ListTypePoliciesRequest{Namespace: namespace})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]*TypePolicy, 0, len(resp.GetPolicies()))
	for _, m := range resp.GetPolicies() {
		tp, err := typePolicyFromPB(m)
		if err != nil {
			return nil, err
		}
		out = append(out, tp)
	}
	return out, nil
}

// Put sets the type's API entry to policy, a JSON object in the policies
// file's shape, replacing the file's entry for the type whole, and returns
// the entry as stored (Source "api", Revision one more). reason is required
// (it goes in the audit trail). ifRevision, when not nil, makes the write
// conditional: it is refused (*FailedPreconditionError) unless the API entry
// is at that revision (0: there is none yet). A policy that is not a JSON
// object is a *ValidationError on "policy_json" and nothing is sent; the
// server judges the rest. Not repeated on another node after UNAVAILABLE: a
// write that was applied would be audited twice, or, with ifRevision, be
// refused as a conflict with itself.
func (p *Policies) Put(ctx context.Context, namespace, taskType string, policy json.RawMessage, reason string, ifRevision *int64) (*TypePolicy, error) {
	text, verr := encodePolicy(policy)
	if verr != nil {
		return nil, verr
	}
	req := &pb.PutTypePolicyRequest{Namespace: namespace, TaskType: taskType, PolicyJson: text, Reason: reason}
	if ifRevision != nil {
		req.IfRevision = proto.Int64(*ifRevision)
	}
	ctx, cancel := p.c.timeout.bound(ctx)
	defer cancel()
	var resp *pb.TypePolicy
	err := p.c.nodes.callPolicies(ctx, false, func(ctx context.Context, s pb.PolicyServiceClient) (err error) {
		resp, err = s.PutTypePolicy(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	return typePolicyFromPB(resp)
}

// Delete removes the type's API entry, giving the type back to the file's
// entry (or to none), and returns the TypePolicy the server answers. reason is
// required; ifRevision is as for Put. A type with no API entry is a
// *NotFoundError. Not repeated after UNAVAILABLE: a retry of a delete that
// was applied would answer NOT_FOUND.
func (p *Policies) Delete(ctx context.Context, namespace, taskType, reason string, ifRevision *int64) (*TypePolicy, error) {
	req := &pb.DeleteTypePolicyRequest{Namespace: namespace, TaskType: taskType, Reason: reason}
	if ifRevision != nil {
		req.IfRevision = proto.Int64(*ifRevision)
	}
	ctx, cancel := p.c.timeout.bound(ctx)
	defer cancel()
	var resp *pb.TypePolicy
	err := p.c.nodes.callPolicies(ctx, false, func(ctx context.Context, s pb.PolicyServiceClient) (err error) {
		resp, err = s.DeleteTypePolicy(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	return typePolicyFromPB(resp)
}
