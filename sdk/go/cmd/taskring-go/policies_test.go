package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	taskring "github.com/taskring/taskring/sdk/go"
	pb "github.com/taskring/taskring/sdk/go/pb/taskring/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// policyKeys are the keys every SDK's CLI prints for a type's policy (the policies client contract).
var policyKeys = []string{"file_policy", "namespace", "policy", "revision", "source", "task_type", "updated_at",
	"updated_by"}

func TestParsePoliciesPutAndDelete(t *testing.T) {
	a, err := parsePolicies([]string{"put", "--nodes", "a:1,b:2", "--namespace", "billing", "--type", "reconcile",
		"--policy", `{"concurrency": {"per_type": 5}}`, "--reason", "incident 42", "--if-revision", "3"})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.nodes) != 2 || a.namespace != "billing" || a.taskType != "reconcile" || a.reason != "incident 42" ||
		string(a.policy) != `{"concurrency": {"per_type": 5}}` || a.ifRevision == nil || *a.ifRevision != 3 {
		t.Errorf("parsed %+v", a)
	}
	// --if-revision 0 is a condition too ("no API entry yet"), unlike no flag at all.
	a, err = parsePolicies([]string{"put", "--nodes", "a:1", "--namespace", "billing", "--type", "reconcile",
		"--policy", "{}", "--reason", "r", "--if-revision", "0"})
	if err != nil || a.ifRevision == nil || *a.ifRevision != 0 {
		t.Errorf("--if-revision 0: %+v %v", a, err)
	}
	a, err = parsePolicies([]string{"delete", "--nodes", "a:1", "--namespace", "billing", "--type", "reconcile",
		"--reason", "back to the file"})
	if err != nil || a.ifRevision != nil || a.reason != "back to the file" || a.policy != nil {
		t.Errorf("delete: %+v %v", a, err)
	}
	// The reason and whether the policy is an object are judged by the server and the client, not here.
	a, err = parsePolicies([]string{"put", "--nodes", "a:1", "--namespace", "billing", "--type", "reconcile",
		"--policy", "[1]"})
	if err != nil || a.reason != "" || string(a.policy) != "[1]" {
		t.Errorf("put without a reason: %+v %v", a, err)
	}
}

func TestParsePoliciesRefusesIncompleteCommands(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "action"},
		{[]string{"explode", "--nodes", "a:1"}, "unknown action"},
		{[]string{"list"}, "--nodes"},
		{[]string{"get", "--nodes", "a:1", "--namespace", "billing"}, "--type"},
		{[]string{"get", "--nodes", "a:1", "--type", "t"}, "--namespace"},
		{[]string{"put", "--nodes", "a:1", "--namespace", "b", "--type", "t", "--reason", "r"}, "--policy"},
		{[]string{"get", "--nodes", "a:1", "--namespace", "b", "--type", "t", "--policy", "{}"}, "-policy"},
		{[]string{"put", "--nodes", "a:1", "--namespace", "b", "--type", "t", "--policy", "{}", "--if-revision", "x"}, "if-revision"},
		{[]string{"get", "--nodes", "a:1", "--namespace", "b", "--type", "t", "extra"}, "unexpected"},
	} {
		if _, err := parsePolicies(c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: want an error about %s, got %v", c.args, c.want, err)
		}
	}
	if a, err := parsePolicies([]string{"list", "--nodes", "a:1"}); err != nil || a.namespace != "" {
		t.Errorf("list without a namespace: %+v %v", a, err)
	}
	if a, err := parsePolicies([]string{"list", "--nodes", "a:1", "--namespace", "billing"}); err != nil || a.namespace != "billing" {
		t.Errorf("list of a namespace: %+v %v", a, err)
	}
}

func TestPolicyJSONHasExactlyTheSharedKeys(t *testing.T) {
	full := decodePolicyLine(t, &taskring.TypePolicy{Namespace: "billing", TaskType: "reconcile",
		Policy: json.RawMessage(`{"concurrency":{"per_type":5}}`), Source: "api", Revision: 3, UpdatedBy: "ops-bot",
		UpdatedAt: time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC), FilePolicy: json.RawMessage(`{"retry":{"max_attempts":2}}`)})
	if keys := sortedKeys(full); fmt.Sprint(keys) != fmt.Sprint(policyKeys) {
		t.Fatalf("keys %v, want %v", keys, policyKeys)
	}
	if p, ok := full["policy"].(map[string]any); !ok || p["concurrency"].(map[string]any)["per_type"] != 5.0 {
		t.Errorf("policy is not the object: %#v", full["policy"])
	}
	if fp, ok := full["file_policy"].(map[string]any); !ok || fp["retry"] == nil {
		t.Errorf("file_policy is not the object: %#v", full["file_policy"])
	}
	if full["revision"] != 3.0 || full["source"] != "api" || full["updated_by"] != "ops-bot" ||
		full["updated_at"] != "2030-01-01T10:00:00Z" || full["namespace"] != "billing" || full["task_type"] != "reconcile" {
		t.Errorf("values: %v", full)
	}

	// No entry anywhere: updated_at and file_policy are null, policy is {}, revision 0.
	none := decodePolicyLine(t, &taskring.TypePolicy{Namespace: "billing", TaskType: "t", Source: "none"})
	if keys := sortedKeys(none); fmt.Sprint(keys) != fmt.Sprint(policyKeys) {
		t.Fatalf("keys %v, want %v", keys, policyKeys)
	}
	for _, k := range []string{"updated_at", "file_policy"} {
		if v, ok := none[k]; !ok || v != nil {
			t.Errorf("%s: want null, got %#v (present %v)", k, v, ok)
		}
	}
	if p, ok := none["policy"].(map[string]any); !ok || len(p) != 0 {
		t.Errorf("no policy: %#v", none["policy"])
	}
	if none["revision"] != 0.0 || none["updated_by"] != "" || none["source"] != "none" {
		t.Errorf("no entry: %v", none)
	}
}

func decodePolicyLine(t *testing.T, p *taskring.TypePolicy) map[string]any {
	t.Helper()
	b, err := json.Marshal(policyJSON(p))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// policyNode is a PolicyService on a TCP port, as the CLI dials one: it
// stores a put entry (revision 1, ...), answers Get of anything else with
// source "none", refuses as the dispatcher words it, and records each
// request and the authorization it carried.
type policyNode struct {
	pb.UnimplementedPolicyServiceServer
	mu   sync.Mutex
	auth []string
	reqs []any
}

func (n *policyNode) seen(ctx context.Context, req any) {
	md, _ := metadata.FromIncomingContext(ctx)
	n.mu.Lock()
	defer n.mu.Unlock()
	n.auth = append(n.auth, strings.Join(md.Get("authorization"), "|"))
	n.reqs = append(n.reqs, req)
}

func (n *policyNode) PutTypePolicy(ctx context.Context, r *pb.PutTypePolicyRequest) (*pb.TypePolicy, error) {
	n.seen(ctx, r)
	if r.GetReason() == "" {
		return nil, status.Error(codes.InvalidArgument, "reason: required")
	}
	if strings.Contains(r.GetPolicyJson(), `"per_type":0`) {
		return nil, status.Error(codes.InvalidArgument, "policy_json.concurrency.per_type: must be at least 1")
	}
	if r.IfRevision != nil && r.GetIfRevision() != 0 {
		return nil, status.Errorf(codes.FailedPrecondition, "policy of '%s/%s' is at revision 0, not %d",
			r.GetNamespace(), r.GetTaskType(), r.GetIfRevision())
	}
	return &pb.TypePolicy{Namespace: r.GetNamespace(), TaskType: r.GetTaskType(), PolicyJson: r.GetPolicyJson(),
		Source: "api", Revision: 1, UpdatedBy: "ops-bot", UpdatedAt: "2030-01-01T10:00:00+00:00",
		FilePolicyJson: `{"retry":{"max_attempts":2}}`}, nil
}

func (n *policyNode) GetTypePolicy(ctx context.Context, r *pb.TypePolicyRef) (*pb.TypePolicy, error) {
	n.seen(ctx, r)
	return &pb.TypePolicy{Namespace: r.GetNamespace(), TaskType: r.GetTaskType(), PolicyJson: "{}", Source: "none"}, nil
}

func (n *policyNode) DeleteTypePolicy(ctx context.Context, r *pb.DeleteTypePolicyRequest) (*pb.TypePolicy, error) {
	n.seen(ctx, r)
	return nil, status.Errorf(codes.NotFound, "no policy of '%s/%s' was set through the API", r.GetNamespace(), r.GetTaskType())
}

func (n *policyNode) ListTypePolicies(ctx context.Context, r *pb.ListTypePoliciesRequest) (*pb.ListTypePoliciesResponse, error) {
	n.seen(ctx, r)
	if r.GetNamespace() != "billing" {
		return &pb.ListTypePoliciesResponse{}, nil
	}
	return &pb.ListTypePoliciesResponse{Policies: []*pb.TypePolicy{
		{Namespace: "billing", TaskType: "a", PolicyJson: `{"retry":{"max_attempts":2}}`, Source: "file",
			FilePolicyJson: `{"retry":{"max_attempts":2}}`},
		{Namespace: "billing", TaskType: "b", PolicyJson: `{"concurrency":{"per_type":5}}`, Source: "api", Revision: 4,
			UpdatedBy: "ops-bot", UpdatedAt: "2030-01-01T10:00:00Z"},
	}}, nil
}

func (n *policyNode) calls() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.reqs)
}

func servePolicyNode(t *testing.T) (*policyNode, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &policyNode{}
	srv := grpc.NewServer()
	pb.RegisterPolicyServiceServer(srv, n)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return n, lis.Addr().String()
}

func oneLine(t *testing.T, out *bytes.Buffer) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var m map[string]any
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &m) != nil {
		t.Fatalf("printed %q", out.String())
	}
	if keys := sortedKeys(m); fmt.Sprint(keys) != fmt.Sprint(policyKeys) {
		t.Errorf("keys %v, want %v", keys, policyKeys)
	}
	return m
}

func TestRunPoliciesPrintsOneLinePerPolicyAndSendsTheToken(t *testing.T) {
	n, addr := servePolicyNode(t)
	t.Setenv("TASKRING_TOKEN", "trk_policy-cli")
	var out bytes.Buffer
	err := runPolicies([]string{"put", "--nodes", addr, "--namespace", "billing", "--type", "reconcile",
		"--policy", `{ "concurrency": {"per_type": 5} }`, "--reason", "incident 42", "--if-revision", "0"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	sent := n.reqs[0].(*pb.PutTypePolicyRequest)
	if sent.GetPolicyJson() != `{"concurrency":{"per_type":5}}` || sent.GetReason() != "incident 42" ||
		sent.IfRevision == nil || sent.GetIfRevision() != 0 {
		t.Errorf("sent %v", sent)
	}
	put := oneLine(t, &out)
	if put["source"] != "api" || put["revision"] != 1.0 || put["updated_at"] != "2030-01-01T10:00:00Z" ||
		put["updated_by"] != "ops-bot" || put["task_type"] != "reconcile" {
		t.Errorf("put: %v", put)
	}
	if p, ok := put["policy"].(map[string]any); !ok || p["concurrency"] == nil {
		t.Errorf("policy: %#v", put["policy"])
	}
	if fp, ok := put["file_policy"].(map[string]any); !ok || fp["retry"] == nil {
		t.Errorf("file_policy: %#v", put["file_policy"])
	}

	out.Reset()
	if err := runPolicies([]string{"get", "--nodes", addr, "--namespace", "billing", "--type", "unknown"}, &out); err != nil {
		t.Fatal(err)
	}
	got := oneLine(t, &out)
	if got["source"] != "none" || got["revision"] != 0.0 || got["updated_at"] != nil || got["file_policy"] != nil {
		t.Errorf("get: %v", got)
	}
	if p, ok := got["policy"].(map[string]any); !ok || len(p) != 0 {
		t.Errorf("policy of none: %#v", got["policy"])
	}

	out.Reset()
	if err := runPolicies([]string{"list", "--nodes", addr, "--namespace", "billing"}, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"source":"file"`) || !strings.Contains(lines[0], `"updated_at":null`) ||
		!strings.Contains(lines[1], `"revision":4`) || !strings.Contains(lines[1], `"file_policy":null`) {
		t.Errorf("list printed %q", out.String())
	}
	out.Reset()
	if err := runPolicies([]string{"list", "--nodes", addr}, &out); err != nil || out.Len() != 0 {
		t.Errorf("empty list printed %q (%v)", out.String(), err)
	}
	if n.reqs[3].(*pb.ListTypePoliciesRequest).GetNamespace() != "" {
		t.Errorf("list without --namespace sent %v", n.reqs[3])
	}
	for i, a := range n.auth {
		if a != "Bearer trk_policy-cli" {
			t.Errorf("call %d sent authorization %q", i, a)
		}
	}
	if len(n.auth) != 4 {
		t.Errorf("%d calls, want 4", len(n.auth))
	}
}

func TestRunPoliciesRefusalNamesTheCodeAndTheField(t *testing.T) {
	n, addr := servePolicyNode(t)
	t.Setenv("TASKRING_TOKEN", "")
	var out bytes.Buffer
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"put", "--nodes", addr, "--namespace", "billing", "--type", "reconcile",
			"--policy", `{"concurrency":{"per_type":0}}`, "--reason", "r"},
			"policies put: INVALID_ARGUMENT: policy_json.concurrency.per_type: must be at least 1"},
		{[]string{"put", "--nodes", addr, "--namespace", "billing", "--type", "reconcile", "--policy", "{}"},
			"policies put: INVALID_ARGUMENT: reason: required"},
		{[]string{"put", "--nodes", addr, "--namespace", "billing", "--type", "reconcile", "--policy", "{}",
			"--reason", "r", "--if-revision", "7"},
			"policies put: FAILED_PRECONDITION: policy of 'billing/reconcile' is at revision 0, not 7"},
		{[]string{"delete", "--nodes", addr, "--namespace", "billing", "--type", "reconcile", "--reason", "r"},
			"policies delete: NOT_FOUND: no policy of 'billing/reconcile' was set through the API"},
	} {
		err := runPolicies(c.args, &out)
		if err == nil || out.Len() != 0 {
			t.Fatalf("%q: err %v, printed %q", c.args, err, out.String())
		}
		if got := describe(err); got != c.want {
			t.Errorf("stderr line %q, want %q", got, c.want)
		}
	}
	// Not a JSON object: the client refuses it, naming policy_json, and sends nothing.
	before := n.calls()
	for _, policy := range []string{"[1]", `"{}"`, "{", "null"} {
		err := runPolicies([]string{"put", "--nodes", addr, "--namespace", "billing", "--type", "reconcile",
			"--policy", policy, "--reason", "r"}, &out)
		if err == nil || !strings.HasPrefix(describe(err), "policies put: taskring: policy_json: ") || out.Len() != 0 {
			t.Errorf("--policy %s: err %v, printed %q", policy, err, out.String())
		}
	}
	if n.calls() != before {
		t.Errorf("a policy that is not an object was sent: %d calls, want %d", n.calls(), before)
	}
}

func TestRunDispatchesPolicies(t *testing.T) {
	// Through run: a local refusal exits 1 (not 2, which is for an unknown mode).
	if code := run([]string{"policies", "get", "--nodes", "127.0.0.1:1"}); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
}
