package taskring

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	pb "github.com/taskring/taskring/sdk/go/pb/taskring/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
)

func TestEncodePolicyKeepsAnObjectAsGiven(t *testing.T) {
	for raw, want := range map[string]string{
		`{}`: `{}`,
		` { "retry": {"max_attempts": 3}, "concurrency": {"per_type": 5} } `: `{"retry":{"max_attempts":3},"concurrency":{"per_type":5}}`,
		`{"big": 9007199254740993}`: `{"big":9007199254740993}`, // beyond float64: kept exactly
	} {
		got, verr := encodePolicy(json.RawMessage(raw))
		if verr != nil || got != want {
			t.Errorf("%s: sent %q (%v), want %q", raw, got, verr, want)
		}
	}
}

func TestEncodePolicyRefusesWhatIsNotAJSONObject(t *testing.T) {
	for raw, problem := range map[string]string{
		"":          "got nothing",
		"  ":        "got nothing",
		`[1]`:       "got array",
		`"{}"`:      "got string",
		`3`:         "got number",
		`null`:      "got null",
		`true`:      "got boolean",
		`{"a": 1`:   "not valid JSON",
		`{"a": 1}x`: "not valid JSON",
	} {
		_, verr := encodePolicy(json.RawMessage(raw))
		if verr == nil || verr.Field != "policy_json" || !strings.Contains(verr.Problem, problem) {
			t.Errorf("%q: want a ValidationError on policy_json (%s), got %v", raw, problem, verr)
		}
	}
	if _, verr := encodePolicy(nil); verr == nil || verr.Field != "policy_json" {
		t.Errorf("nil: want a ValidationError on policy_json, got %v", verr)
	}
}

func TestTypePolicyFromPB(t *testing.T) {
	p, err := typePolicyFromPB(&pb.TypePolicy{Namespace: "billing", TaskType: "reconcile",
		PolicyJson: `{"concurrency":{"per_type":5}}`, Source: "api", Revision: 3, UpdatedBy: "ops-bot",
		UpdatedAt: "2030-01-01T10:00:00.250Z", FilePolicyJson: `{"concurrency":{"per_type":2}}`})
	if err != nil {
		t.Fatal(err)
	}
	if p.Namespace != "billing" || p.TaskType != "reconcile" || p.Source != PolicySourceAPI || p.Revision != 3 ||
		p.UpdatedBy != "ops-bot" || string(p.Policy) != `{"concurrency":{"per_type":5}}` ||
		string(p.FilePolicy) != `{"concurrency":{"per_type":2}}` {
		t.Errorf("policy: %+v", p)
	}
	if !p.UpdatedAt.Equal(time.Date(2030, 1, 1, 10, 0, 0, 250000000, time.UTC)) {
		t.Errorf("updated_at: %v", p.UpdatedAt)
	}
	var c struct {
		Concurrency struct {
			PerType int `json:"per_type"`
		}
	}
	if err := p.Decode(&c); err != nil || c.Concurrency.PerType != 5 {
		t.Errorf("Decode: %+v %v", c, err)
	}

	// No entry anywhere: empty updated_at is the zero time, empty file_policy_json is nil (not {}).
	p, err = typePolicyFromPB(&pb.TypePolicy{Namespace: "billing", TaskType: "t", PolicyJson: "{}", Source: "none"})
	if err != nil {
		t.Fatal(err)
	}
	if !p.UpdatedAt.IsZero() || p.FilePolicy != nil || string(p.Policy) != "{}" || p.Revision != 0 ||
		p.Source != PolicySourceNone || p.UpdatedBy != "" {
		t.Errorf("no entry: %+v", p)
	}
	// An empty policy_json reads as {} (as an empty payload_json does).
	if p, err = typePolicyFromPB(&pb.TypePolicy{Source: "file"}); err != nil || string(p.Policy) != "{}" {
		t.Errorf("empty policy_json: %+v %v", p, err)
	}

	for _, bad := range []*pb.TypePolicy{
		{PolicyJson: "[1]"},
		{PolicyJson: "{"},
		{PolicyJson: "{}", FilePolicyJson: "3"},
		{PolicyJson: "{}", UpdatedAt: "yesterday"},
	} {
		var pe *ProtocolError
		if _, err := typePolicyFromPB(bad); !errors.As(err, &pe) {
			t.Errorf("%v: want a ProtocolError, got %v", bad, err)
		}
	}
}

// fakePolicies is an in-process PolicyService keeping API entries over a
// fixed "file", refusing as the contract says the dispatcher does, and
// recording each call with the request and authorization it carried.
type fakePolicies struct {
	pb.UnimplementedPolicyServiceServer
	mu    sync.Mutex
	api   map[string]*pb.TypePolicy // namespace/type -> the API entry
	file  map[string]string         // namespace/type -> the file's entry
	calls []string
	auth  []string
	reqs  []proto.Message
	err   error // answered to every call when set
}

func (f *fakePolicies) record(ctx context.Context, method string, req proto.Message) error {
	md, _ := metadata.FromIncomingContext(ctx)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, method)
	f.auth = append(f.auth, strings.Join(md.Get("authorization"), "|"))
	f.reqs = append(f.reqs, req)
	return f.err
}

func (f *fakePolicies) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// effective is the entry in effect for key; f.mu is held.
func (f *fakePolicies) effective(namespace, taskType string) *pb.TypePolicy {
	key := namespace + "/" + taskType
	file := f.file[key]
	if e, ok := f.api[key]; ok {
		out := proto.Clone(e).(*pb.TypePolicy)
		out.FilePolicyJson = file
		return out
	}
	if file != "" {
		return &pb.TypePolicy{Namespace: namespace, TaskType: taskType, PolicyJson: file, Source: "file", FilePolicyJson: file}
	}
	return &pb.TypePolicy{Namespace: namespace, TaskType: taskType, PolicyJson: "{}", Source: "none"}
}

func (f *fakePolicies) GetTypePolicy(ctx context.Context, r *pb.TypePolicyRef) (*pb.TypePolicy, error) {
	if err := f.record(ctx, "get", r); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.effective(r.GetNamespace(), r.GetTaskType()), nil
}

func (f *fakePolicies) ListTypePolicies(ctx context.Context, r *pb.ListTypePoliciesRequest) (*pb.ListTypePoliciesResponse, error) {
	if err := f.record(ctx, "list", r); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	keys := map[string]bool{}
	for k := range f.api {
		keys[k] = true
	}
	for k := range f.file {
		keys[k] = true
	}
	out := &pb.ListTypePoliciesResponse{}
	for k := range keys {
		ns, tt, _ := strings.Cut(k, "/")
		if r.GetNamespace() == "" || r.GetNamespace() == ns {
			out.Policies = append(out.Policies, f.effective(ns, tt))
		}
	}
	return out, nil
}

// check refuses as the dispatcher does: the reason first, then the revision; f.mu is held.
func (f *fakePolicies) check(key, reason string, ifRevision *int64) error {
	if reason == "" {
		return status.Error(codes.InvalidArgument, "reason: required (it goes in the audit trail)")
	}
	var rev int64
	if e, ok := f.api[key]; ok {
		rev = e.GetRevision()
	}
	if ifRevision != nil && *ifRevision != rev {
		return status.Errorf(codes.FailedPrecondition, "policy of '%s' is at revision %d, not %d", key, rev, *ifRevision)
	}
	return nil
}

func (f *fakePolicies) PutTypePolicy(ctx context.Context, r *pb.PutTypePolicyRequest) (*pb.TypePolicy, error) {
	if err := f.record(ctx, "put", r); err != nil {
		return nil, err
	}
	key := r.GetNamespace() + "/" + r.GetTaskType()
	f.mu.Lock()
	defer f.mu.Unlock()
	if strings.Contains(r.GetPolicyJson(), `"per_type":-`) {
		return nil, status.Error(codes.InvalidArgument, "policy_json.concurrency.per_type: must be a positive integer")
	}
	if err := f.check(key, r.GetReason(), r.IfRevision); err != nil {
		return nil, err
	}
	var rev int64
	if e, ok := f.api[key]; ok {
		rev = e.GetRevision()
	}
	f.api[key] = &pb.TypePolicy{Namespace: r.GetNamespace(), TaskType: r.GetTaskType(), PolicyJson: r.GetPolicyJson(),
		Source: "api", Revision: rev + 1, UpdatedBy: "ops-bot", UpdatedAt: "2030-01-01T10:00:00+00:00"}
	return f.effective(r.GetNamespace(), r.GetTaskType()), nil
}

func (f *fakePolicies) DeleteTypePolicy(ctx context.Context, r *pb.DeleteTypePolicyRequest) (*pb.TypePolicy, error) {
	if err := f.record(ctx, "delete", r); err != nil {
		return nil, err
	}
	key := r.GetNamespace() + "/" + r.GetTaskType()
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(key, r.GetReason(), r.IfRevision); err != nil {
		return nil, err
	}
	if _, ok := f.api[key]; !ok {
		return nil, status.Errorf(codes.NotFound, "no policy of '%s' was set through the API", key)
	}
	delete(f.api, key)
	return f.effective(r.GetNamespace(), r.GetTaskType()), nil
}

// policyCluster starts n fake PolicyServices on bufconn listeners and a client over all of them.
func policyCluster(t *testing.T, n int, opts ...ClientOption) ([]*fakePolicies, *Client) {
	t.Helper()
	listeners := map[string]*bufconn.Listener{}
	var fakes []*fakePolicies
	var addrs []string
	for i := 0; i < n; i++ {
		name := string(rune('a' + i))
		lis := bufconn.Listen(1 << 20)
		srv := grpc.NewServer()
		f := &fakePolicies{api: map[string]*pb.TypePolicy{}, file: map[string]string{}}
		pb.RegisterPolicyServiceServer(srv, f)
		go func() { _ = srv.Serve(lis) }()
		t.Cleanup(srv.Stop)
		listeners[name] = lis
		fakes = append(fakes, f)
		addrs = append(addrs, "passthrough:///"+name)
	}
	dialer := grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
		return listeners[addr].DialContext(ctx)
	})
	c, err := NewClient(append([]ClientOption{WithNodes(addrs...), WithTimeout(5 * time.Second), WithDialOptions(dialer)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return fakes, c
}

func TestPoliciesLifecycleOverTheClient(t *testing.T) {
	fakes, c := policyCluster(t, 1, WithToken("trk_policy-secret"))
	fakes[0].file["billing/reconcile"] = `{"concurrency":{"per_type":2}}`
	ctx, pols := context.Background(), c.Policies()

	got, err := pols.Get(ctx, "billing", "reconcile")
	if err != nil || got.Source != PolicySourceFile || got.Revision != 0 || !got.UpdatedAt.IsZero() ||
		string(got.FilePolicy) != `{"concurrency":{"per_type":2}}` {
		t.Fatalf("get from the file: %+v %v", got, err)
	}
	if none, err := pols.Get(ctx, "billing", "unknown"); err != nil || none.Source != PolicySourceNone ||
		string(none.Policy) != "{}" || none.FilePolicy != nil {
		t.Fatalf("get of a type with no entry: %+v %v", none, err)
	}

	put, err := pols.Put(ctx, "billing", "reconcile", json.RawMessage(`{ "concurrency": {"per_type": 5} }`), "incident 42", nil)
	if err != nil {
		t.Fatal(err)
	}
	if put.Source != PolicySourceAPI || put.Revision != 1 || put.UpdatedBy != "ops-bot" || put.UpdatedAt.IsZero() ||
		string(put.Policy) != `{"concurrency":{"per_type":5}}` || string(put.FilePolicy) != `{"concurrency":{"per_type":2}}` {
		t.Errorf("put: %+v", put)
	}
	sent := fakes[0].reqs[2].(*pb.PutTypePolicyRequest)
	if sent.IfRevision != nil || sent.GetReason() != "incident 42" || sent.GetPolicyJson() != `{"concurrency":{"per_type":5}}` {
		t.Errorf("put sent %v", sent)
	}
	one := int64(1)
	if put, err = pols.Put(ctx, "billing", "reconcile", json.RawMessage(`{}`), "clear", &one); err != nil || put.Revision != 2 {
		t.Fatalf("conditional put: %+v %v", put, err)
	}
	if sent := fakes[0].reqs[3].(*pb.PutTypePolicyRequest); sent.IfRevision == nil || sent.GetIfRevision() != 1 {
		t.Errorf("if_revision sent as %v", sent.IfRevision)
	}

	if list, err := pols.List(ctx, "billing"); err != nil || len(list) != 1 || list[0].TaskType != "reconcile" {
		t.Fatalf("list: %v %v", list, err)
	}
	if list, err := pols.List(ctx, "nothing-here"); err != nil || len(list) != 0 {
		t.Fatalf("empty list: %v %v", list, err)
	}

	two := int64(2)
	del, err := pols.Delete(ctx, "billing", "reconcile", "back to the file", &two)
	if err != nil || del.Source != PolicySourceFile {
		t.Fatalf("delete: %+v %v", del, err)
	}
	if sent := fakes[0].reqs[6].(*pb.DeleteTypePolicyRequest); sent.GetReason() != "back to the file" || sent.GetIfRevision() != 2 {
		t.Errorf("delete sent %v", sent)
	}
	// WithToken applies to the PolicyService as to the TaskService: every call carried it.
	for i, a := range fakes[0].auth {
		if a != "Bearer trk_policy-secret" {
			t.Errorf("call %d (%s) sent authorization %q", i, fakes[0].calls[i], a)
		}
	}
	if len(fakes[0].auth) != 7 {
		t.Errorf("%d calls recorded, want 7", len(fakes[0].auth))
	}
}

func TestPoliciesRefusalsAreTheClientsErrorTypes(t *testing.T) {
	fakes, c := policyCluster(t, 1)
	ctx, pols := context.Background(), c.Policies()

	_, err := pols.Put(ctx, "billing", "reconcile", json.RawMessage(`{"concurrency":{"per_type":-1}}`), "r", nil)
	var bad *InvalidArgumentError
	if !errors.As(err, &bad) || bad.Field != "policy_json.concurrency.per_type" || bad.Code != codes.InvalidArgument {
		t.Errorf("bad policy: want *InvalidArgumentError on policy_json.concurrency.per_type, got %v", err)
	}
	_, err = pols.Put(ctx, "billing", "reconcile", json.RawMessage(`{}`), "", nil)
	if !errors.As(err, &bad) || bad.Field != "reason" {
		t.Errorf("empty reason: want *InvalidArgumentError on reason, got %v", err)
	}
	seven := int64(7)
	_, err = pols.Put(ctx, "billing", "reconcile", json.RawMessage(`{}`), "r", &seven)
	var stale *FailedPreconditionError
	if !errors.As(err, &stale) || !strings.Contains(stale.Details, "revision 0") {
		t.Errorf("stale revision: want *FailedPreconditionError, got %v", err)
	}
	var nf *NotFoundError
	if _, err := pols.Delete(ctx, "billing", "reconcile", "r", nil); !errors.As(err, &nf) {
		t.Errorf("delete without an API entry: want *NotFoundError, got %v", err)
	}

	// Not a JSON object: refused on the client, nothing sent.
	before := fakes[0].count()
	for _, policy := range []string{`[1]`, `"x"`, ``, `{`} {
		_, err := pols.Put(ctx, "billing", "reconcile", json.RawMessage(policy), "r", nil)
		var verr *ValidationError
		if !errors.As(err, &verr) || verr.Field != "policy_json" {
			t.Errorf("%q: want *ValidationError on policy_json, got %v", policy, err)
		}
	}
	if fakes[0].count() != before {
		t.Errorf("a refused policy was sent: %d calls, want %d", fakes[0].count(), before)
	}
}

func TestPoliciesRetryOnlyTheReadsOnTheNextNode(t *testing.T) {
	fakes, c := policyCluster(t, 2)
	fakes[0].err = status.Error(codes.Unavailable, "draining")
	fakes[1].api["billing/reconcile"] = &pb.TypePolicy{Namespace: "billing", TaskType: "reconcile", PolicyJson: "{}", Source: "api", Revision: 1}
	ctx, pols := context.Background(), c.Policies()
	safe := []func() error{
		func() error { _, err := pols.Get(ctx, "billing", "reconcile"); return err },
		func() error { _, err := pols.List(ctx, ""); return err },
	}
	for i, call := range safe {
		c.nodes.next.Store(0) // first try on the unavailable node a
		if err := call(); err != nil {
			t.Errorf("read %d not retried on b: %v", i, err)
		}
	}
	if fakes[0].count() != 2 || fakes[1].count() != 2 {
		t.Errorf("calls a=%d b=%d, want 2 and 2", fakes[0].count(), fakes[1].count())
	}
	unsafe := []func() error{
		func() error {
			_, err := pols.Put(ctx, "billing", "reconcile", json.RawMessage(`{}`), "r", nil)
			return err
		},
		func() error { _, err := pols.Delete(ctx, "billing", "reconcile", "r", nil); return err },
	}
	for i, call := range unsafe {
		c.nodes.next.Store(0)
		if err := call(); !errors.As(err, new(*UnavailableError)) {
			t.Errorf("write %d: want *UnavailableError, got %v", i, err)
		}
	}
	if fakes[1].count() != 2 {
		t.Errorf("Put or Delete was repeated on b: %d calls there", fakes[1].count())
	}
}
