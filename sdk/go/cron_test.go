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

func TestCronSpecToPBSendsOptionalFieldsOnlyWhenSet(t *testing.T) {
	r, verr := cronSpecToPB(&CronRuleSpec{Namespace: "billing", Name: "nightly", TaskType: "reconcile",
		Schedule: "0 0 * * *", TimeZone: "Asia/Singapore"})
	if verr != nil {
		t.Fatal(verr)
	}
	if r.TimeoutMs != nil || r.MaxRetries != nil {
		t.Errorf("unset timeout/max_retries were sent: %v", r)
	}
	if r.GetPayloadJson() != "{}" || r.GetTimeZone() != "Asia/Singapore" || r.GetSchedule() != "0 0 * * *" {
		t.Errorf("wire rule: %v", r)
	}

	timeout, zero := 30*time.Second, 0
	r, verr = cronSpecToPB(&CronRuleSpec{Namespace: "billing", Name: "nightly", TaskType: "reconcile",
		Schedule: "0 0 * * *", Payload: map[string]any{"scope": "all", "n": 1}, CatchUp: "all", CatchUpLimit: 7,
		Overlap: "queue_one", OnRepeatedHour: "twice", OnSkippedHour: "skip", OwnerTeam: "payments",
		Description: "d", Timeout: &timeout, MaxRetries: &zero})
	if verr != nil {
		t.Fatal(verr)
	}
	if r.TimeoutMs == nil || r.GetTimeoutMs() != 30000 || r.MaxRetries == nil || r.GetMaxRetries() != 0 {
		t.Errorf("timeout/max_retries: %v", r)
	}
	if r.GetPayloadJson() != `{"n":1,"scope":"all"}` || r.GetCatchUp() != "all" || r.GetCatchUpLimit() != 7 ||
		r.GetOverlap() != "queue_one" || r.GetOnRepeatedHour() != "twice" || r.GetOnSkippedHour() != "skip" ||
		r.GetOwnerTeam() != "payments" || r.GetDescription() != "d" {
		t.Errorf("wire rule: %v", r)
	}
	// json.RawMessage keeps the caller's key order, as for a task.
	r, _ = cronSpecToPB(&CronRuleSpec{Payload: json.RawMessage(`{ "b": 1, "a": 2 }`)})
	if r.GetPayloadJson() != `{"b":1,"a":2}` {
		t.Errorf("raw payload sent as %s", r.GetPayloadJson())
	}
}

func TestCronSpecToPBRefusesOnlyWhatTheWireCannotCarry(t *testing.T) {
	neg, huge, big := -time.Millisecond, time.Duration(1<<32)*time.Millisecond, 1<<31
	for _, c := range []struct {
		spec  CronRuleSpec
		field string
	}{
		{CronRuleSpec{Payload: []int{1}}, "payload"},
		{CronRuleSpec{Payload: "{}"}, "payload"},
		{CronRuleSpec{Timeout: &neg}, "timeout"},
		{CronRuleSpec{Timeout: &huge}, "timeout"},
		{CronRuleSpec{MaxRetries: &big}, "max_retries"},
	} {
		if _, verr := cronSpecToPB(&c.spec); verr == nil || verr.Field != c.field {
			t.Errorf("%+v: want a ValidationError on %s, got %v", c.spec, c.field, verr)
		}
	}
	// Names, schedule and zone are the server's to judge, even when obviously wrong.
	if _, verr := cronSpecToPB(&CronRuleSpec{Namespace: "Bad NS", Schedule: "nope", TimeZone: "Mars/Olympus_Mons"}); verr != nil {
		t.Errorf("refused locally: %v", verr)
	}
}

func TestCronRuleFromPB(t *testing.T) {
	m := &pb.CronRule{Namespace: "billing", Name: "nightly", TaskType: "reconcile", PayloadJson: `{"scope":"all"}`,
		Schedule: "0 0 * * *", TimeZone: "Asia/Singapore", CatchUp: "latest", CatchUpLimit: 100, Overlap: "skip",
		TimeoutMs: proto.Uint32(30000), MaxRetries: proto.Int32(2),
		LastFireTaskId: "cron-u1-1893456000000", LastFireState: pb.TaskState_TASK_STATE_SUCCEEDED,
		LastFireTime: "2030-01-01T00:00:00Z", NextFireTime: "2030-01-01T16:00:00+00:00",
		CreatedAt: "2029-12-31T10:00:00.123Z", UpdatedAt: "2029-12-31T10:00:00.123Z"}
	r, err := cronRuleFromPB(m)
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Payload) != `{"scope":"all"}` || r.Timeout == nil || *r.Timeout != 30*time.Second ||
		r.MaxRetries == nil || *r.MaxRetries != 2 || r.LastFireState != StateSucceeded ||
		r.LastFireTaskID != "cron-u1-1893456000000" || r.CatchUpLimit != 100 || r.Overlap != "skip" {
		t.Errorf("rule: %+v", r)
	}
	if r.LastFireTime.UnixMilli() != 1893456000000 || r.NextFireTime.UnixMilli() != 1893456000000+16*3600*1000 ||
		r.CreatedAt.Nanosecond() != 123000000 || r.UpdatedAt.IsZero() {
		t.Errorf("times: %+v", r)
	}
	var p struct{ Scope string }
	if err := r.Decode(&p); err != nil || p.Scope != "all" {
		t.Errorf("Decode: %+v %v", p, err)
	}
	if back := r.Spec(); back.Name != "nightly" || back.Timeout != r.Timeout || back.TimeZone != "Asia/Singapore" {
		t.Errorf("Spec: %+v", back)
	}

	// No last fire: its state is not read (QUEUED's zero value would be a lie); unset optionals stay nil.
	r, err = cronRuleFromPB(&pb.CronRule{Name: "n", Paused: true, LastFireState: pb.TaskState_TASK_STATE_UNSPECIFIED})
	if err != nil {
		t.Fatal(err)
	}
	if r.LastFireState != "" || r.Timeout != nil || r.MaxRetries != nil || !r.NextFireTime.IsZero() ||
		!r.Paused || string(r.Payload) != "{}" {
		t.Errorf("empty rule: %+v", r)
	}

	for _, bad := range []*pb.CronRule{
		{LastFireTaskId: "cron-x-1", LastFireState: pb.TaskState(99)},
		{NextFireTime: "tomorrow"},
		{PayloadJson: "[1]"},
	} {
		var pe *ProtocolError
		if _, err := cronRuleFromPB(bad); !errors.As(err, &pe) {
			t.Errorf("%v: want a ProtocolError, got %v", bad, err)
		}
	}
}

// fakeCron is an in-process CronService keeping rules in a map, refusing as
// the dispatcher does (the messages are dispatcher/store/cron.py's), and
// recording each call with the authorization it carried.
type fakeCron struct {
	pb.UnimplementedCronServiceServer
	mu    sync.Mutex
	rules map[string]*pb.CronRule
	calls []string
	auth  []string
	err   error // answered to every call when set
}

func (f *fakeCron) record(ctx context.Context, method string) error {
	md, _ := metadata.FromIncomingContext(ctx)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, method)
	f.auth = append(f.auth, strings.Join(md.Get("authorization"), "|"))
	return f.err
}

func (f *fakeCron) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

func (f *fakeCron) put(ctx context.Context, r *pb.PutCronRuleRequest, create bool) (*pb.PutCronRuleResponse, error) {
	if err := f.record(ctx, "put"); err != nil {
		return nil, err
	}
	rule := proto.Clone(r.GetRule()).(*pb.CronRule)
	if rule.GetTimeZone() == "" || strings.Contains(rule.GetTimeZone(), "Mars") {
		return nil, status.Errorf(codes.InvalidArgument, "rule.time_zone: unknown time zone %q", rule.GetTimeZone())
	}
	key := rule.GetNamespace() + "/" + rule.GetName()
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.rules[key]; ok == create {
		if create {
			return nil, status.Errorf(codes.AlreadyExists, "cron rule '%s' already exists (UpdateCronRule changes it)", key)
		}
		return nil, status.Errorf(codes.NotFound, "cron rule '%s' not found", key)
	}
	if rule.GetCatchUp() == "" {
		rule.CatchUp = "latest"
	}
	rule.NextFireTime, rule.CreatedAt, rule.UpdatedAt = "2030-01-01T16:00:00+00:00", "2029-12-31T10:00:00+00:00", "2029-12-31T10:00:00+00:00"
	f.rules[key] = rule
	return &pb.PutCronRuleResponse{Rule: rule}, nil
}

func (f *fakeCron) CreateCronRule(ctx context.Context, r *pb.PutCronRuleRequest) (*pb.PutCronRuleResponse, error) {
	return f.put(ctx, r, true)
}

func (f *fakeCron) UpdateCronRule(ctx context.Context, r *pb.PutCronRuleRequest) (*pb.PutCronRuleResponse, error) {
	return f.put(ctx, r, false)
}

func (f *fakeCron) one(ctx context.Context, method string, ref *pb.CronRuleRef, change func(key string, r *pb.CronRule)) (*pb.CronRule, error) {
	if err := f.record(ctx, method); err != nil {
		return nil, err
	}
	key := ref.GetNamespace() + "/" + ref.GetName()
	f.mu.Lock()
	defer f.mu.Unlock()
	rule, ok := f.rules[key]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "cron rule '%s' not found", key)
	}
	change(key, rule)
	return rule, nil
}

func (f *fakeCron) GetCronRule(ctx context.Context, r *pb.CronRuleRef) (*pb.CronRule, error) {
	return f.one(ctx, "get", r, func(string, *pb.CronRule) {})
}

func (f *fakeCron) PauseCronRule(ctx context.Context, r *pb.CronRuleRef) (*pb.CronRule, error) {
	return f.one(ctx, "pause", r, func(_ string, c *pb.CronRule) { c.Paused, c.NextFireTime = true, "" })
}

func (f *fakeCron) ResumeCronRule(ctx context.Context, r *pb.CronRuleRef) (*pb.CronRule, error) {
	return f.one(ctx, "resume", r, func(_ string, c *pb.CronRule) { c.Paused, c.NextFireTime = false, "2030-01-01T16:00:00+00:00" })
}

func (f *fakeCron) DeleteCronRule(ctx context.Context, r *pb.CronRuleRef) (*pb.CronRule, error) {
	return f.one(ctx, "delete", r, func(key string, _ *pb.CronRule) { delete(f.rules, key) })
}

func (f *fakeCron) ListCronRules(ctx context.Context, r *pb.ListCronRulesRequest) (*pb.ListCronRulesResponse, error) {
	if err := f.record(ctx, "list"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := &pb.ListCronRulesResponse{}
	for _, rule := range f.rules {
		if r.GetNamespace() == "" || rule.GetNamespace() == r.GetNamespace() {
			out.Rules = append(out.Rules, rule)
		}
	}
	return out, nil
}

// cronCluster starts n fake CronServices on bufconn listeners and a client over all of them.
func cronCluster(t *testing.T, n int, opts ...ClientOption) ([]*fakeCron, *Client) {
	t.Helper()
	listeners := map[string]*bufconn.Listener{}
	var fakes []*fakeCron
	var addrs []string
	for i := 0; i < n; i++ {
		name := string(rune('a' + i))
		lis := bufconn.Listen(1 << 20)
		srv := grpc.NewServer()
		f := &fakeCron{rules: map[string]*pb.CronRule{}}
		pb.RegisterCronServiceServer(srv, f)
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

func TestCronLifecycleOverTheClient(t *testing.T) {
	fakes, c := cronCluster(t, 1, WithToken("trk_cron-secret"))
	ctx, cron := context.Background(), c.Cron()
	two := 2
	spec := CronRuleSpec{Namespace: "billing", Name: "nightly", TaskType: "reconcile", Schedule: "0 0 * * *",
		TimeZone: "Asia/Singapore", Payload: map[string]string{"scope": "all"}, MaxRetries: &two}
	created, err := cron.Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if created.CatchUp != "latest" || created.MaxRetries == nil || *created.MaxRetries != 2 || created.Timeout != nil ||
		string(created.Payload) != `{"scope":"all"}` || created.NextFireTime.IsZero() {
		t.Errorf("created: %+v", created)
	}
	got, err := cron.Get(ctx, "billing", "nightly")
	if err != nil || got.Name != "nightly" || got.TimeZone != "Asia/Singapore" {
		t.Fatalf("get: %+v %v", got, err)
	}
	if list, err := cron.List(ctx, "billing"); err != nil || len(list) != 1 || list[0].Name != "nightly" {
		t.Fatalf("list: %v %v", list, err)
	}
	if list, err := cron.List(ctx, "nothing-here"); err != nil || len(list) != 0 {
		t.Fatalf("empty list: %v %v", list, err)
	}
	spec.TimeZone, spec.MaxRetries = "Europe/London", nil
	if up, err := cron.Update(ctx, spec); err != nil || up.TimeZone != "Europe/London" || up.MaxRetries != nil {
		t.Fatalf("update: %+v %v", up, err)
	}
	if p, err := cron.Pause(ctx, "billing", "nightly"); err != nil || !p.Paused || !p.NextFireTime.IsZero() {
		t.Fatalf("pause: %+v %v", p, err)
	}
	if r, err := cron.Resume(ctx, "billing", "nightly"); err != nil || r.Paused || r.NextFireTime.IsZero() {
		t.Fatalf("resume: %+v %v", r, err)
	}
	if d, err := cron.Delete(ctx, "billing", "nightly"); err != nil || d.Name != "nightly" {
		t.Fatalf("delete: %+v %v", d, err)
	}
	if len(fakes[0].rules) != 0 {
		t.Errorf("rules left: %v", fakes[0].rules)
	}
	// WithToken applies to the CronService as to the TaskService: every call carried it.
	for i, a := range fakes[0].auth {
		if a != "Bearer trk_cron-secret" {
			t.Errorf("call %d (%s) sent authorization %q", i, fakes[0].calls[i], a)
		}
	}
	if len(fakes[0].auth) != 8 {
		t.Errorf("%d calls recorded, want 8", len(fakes[0].auth))
	}
}

func TestCronRefusalsAreTheClientsErrorTypes(t *testing.T) {
	_, c := cronCluster(t, 1)
	ctx, cron := context.Background(), c.Cron()
	spec := CronRuleSpec{Namespace: "billing", Name: "nightly", TaskType: "reconcile", Schedule: "0 0 * * *", TimeZone: "UTC"}
	if _, err := cron.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	_, err := cron.Create(ctx, spec)
	var exists *AlreadyExistsError
	if !errors.As(err, &exists) || !strings.Contains(exists.Details, "already exists") {
		t.Errorf("duplicate: want *AlreadyExistsError, got %v", err)
	}
	spec.Name, spec.TimeZone = "bad", "Mars/Olympus_Mons"
	_, err = cron.Create(ctx, spec)
	var bad *InvalidArgumentError
	if !errors.As(err, &bad) || bad.Field != "rule.time_zone" || bad.Code != codes.InvalidArgument {
		t.Errorf("bad zone: want *InvalidArgumentError on rule.time_zone, got %v", err)
	}
	var nf *NotFoundError
	if _, err := cron.Get(ctx, "billing", "no-such-rule"); !errors.As(err, &nf) {
		t.Errorf("get missing: want *NotFoundError, got %v", err)
	}
	spec.Name, spec.TimeZone = "no-such-rule", "UTC"
	if _, err := cron.Update(ctx, spec); !errors.As(err, &nf) {
		t.Errorf("update missing: want *NotFoundError, got %v", err)
	}
	if _, err := cron.Create(ctx, CronRuleSpec{Payload: []int{1}}); !errors.As(err, new(*ValidationError)) {
		t.Errorf("array payload: want *ValidationError, got %v", err)
	}
}

func TestCronRetriesOnlyTheSafeCallsOnTheNextNode(t *testing.T) {
	fakes, c := cronCluster(t, 2)
	fakes[0].err = status.Error(codes.Unavailable, "draining")
	ctx, cron := context.Background(), c.Cron()
	fakes[1].rules["billing/nightly"] = &pb.CronRule{Namespace: "billing", Name: "nightly"}
	spec := CronRuleSpec{Namespace: "billing", Name: "nightly", TaskType: "t", Schedule: "* * * * *", TimeZone: "UTC"}
	safe := []func() error{
		func() error { _, err := cron.Get(ctx, "billing", "nightly"); return err },
		func() error { _, err := cron.List(ctx, ""); return err },
		func() error { _, err := cron.Pause(ctx, "billing", "nightly"); return err },
		func() error { _, err := cron.Resume(ctx, "billing", "nightly"); return err },
		func() error { _, err := cron.Update(ctx, spec); return err },
	}
	for i, call := range safe {
		c.nodes.next.Store(0) // first try on the unavailable node a
		if err := call(); err != nil {
			t.Errorf("safe call %d not retried on b: %v", i, err)
		}
	}
	if fakes[0].count() != 5 || fakes[1].count() != 5 {
		t.Errorf("calls a=%d b=%d, want 5 and 5", fakes[0].count(), fakes[1].count())
	}
	spec.Name = "other"
	unsafe := []func() error{
		func() error { _, err := cron.Create(ctx, spec); return err },
		func() error { _, err := cron.Delete(ctx, "billing", "nightly"); return err },
	}
	for i, call := range unsafe {
		c.nodes.next.Store(0)
		if err := call(); !errors.As(err, new(*UnavailableError)) {
			t.Errorf("unsafe call %d: want *UnavailableError, got %v", i, err)
		}
	}
	if fakes[1].count() != 5 {
		t.Errorf("Create or Delete was repeated on b: %d calls there", fakes[1].count())
	}
}
