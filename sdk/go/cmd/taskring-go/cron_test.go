package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sort"
	"strings"
	"testing"
	"time"

	taskring "github.com/taskring/taskring/sdk/go"
	pb "github.com/taskring/taskring/sdk/go/pb/taskring/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// ruleKeys is RULE_KEYS of tests/integration/test_sdk_cron.py: the keys every SDK's CLI prints.
var ruleKeys = []string{"catch_up", "catch_up_limit", "created_at", "description", "last_fire_state",
	"last_fire_task_id", "last_fire_time", "max_retries", "name", "namespace", "next_fire_time", "on_repeated_hour",
	"on_skipped_hour", "overlap", "owner_team", "paused", "payload", "schedule", "task_type", "time_zone",
	"timeout_ms", "updated_at"}

func TestParseCronPut(t *testing.T) {
	a, err := parseCron([]string{"create", "--nodes", "a:1,b:2", "--namespace", "billing", "--name", "nightly",
		"--type", "reconcile", "--schedule", "0 0 * * *", "--zone", "Asia/Singapore", "--payload", `{"scope": "all"}`,
		"--owner-team", "payments", "--description", "midnight SGT", "--catch-up", "all", "--catch-up-limit", "5",
		"--overlap", "skip", "--on-repeated-hour", "twice", "--on-skipped-hour", "skip",
		"--timeout-ms", "30000", "--max-retries", "0"})
	if err != nil {
		t.Fatal(err)
	}
	s := a.spec
	if len(a.nodes) != 2 || s.Namespace != "billing" || s.Name != "nightly" || s.TaskType != "reconcile" ||
		s.Schedule != "0 0 * * *" || s.TimeZone != "Asia/Singapore" || string(s.Payload.(json.RawMessage)) != `{"scope": "all"}` ||
		s.OwnerTeam != "payments" || s.Description != "midnight SGT" || s.CatchUp != "all" || s.CatchUpLimit != 5 ||
		s.Overlap != "skip" || s.OnRepeatedHour != "twice" || s.OnSkippedHour != "skip" {
		t.Errorf("parsed %+v", s)
	}
	if s.Timeout == nil || *s.Timeout != 30*time.Second || s.MaxRetries == nil || *s.MaxRetries != 0 {
		t.Errorf("timeout %v, max retries %v", s.Timeout, s.MaxRetries)
	}
	// Not given: unset, so the server's default applies and the rule reads back null.
	a, err = parseCron([]string{"update", "--nodes", "a:1", "--namespace", "billing", "--name", "nightly",
		"--type", "reconcile", "--schedule", "0 0 * * *"})
	if err != nil || a.spec.Timeout != nil || a.spec.MaxRetries != nil || string(a.spec.Payload.(json.RawMessage)) != "{}" {
		t.Errorf("defaults %+v %v", a.spec, err)
	}
}

func TestParseCronRefusesIncompleteCommands(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "action"},
		{[]string{"explode", "--nodes", "a:1"}, "unknown action"},
		{[]string{"list"}, "--nodes"},
		{[]string{"get", "--nodes", "a:1", "--namespace", "billing"}, "--name"},
		{[]string{"create", "--nodes", "a:1", "--namespace", "b", "--name", "n", "--schedule", "* * * * *"}, "--type"},
		{[]string{"create", "--nodes", "a:1", "--namespace", "b", "--name", "n", "--type", "t", "--schedule", "* * * * *",
			"--payload", "{"}, "--payload"},
		{[]string{"get", "--nodes", "a:1", "--namespace", "b", "--name", "n", "extra"}, "unexpected"},
	} {
		if _, err := parseCron(c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: want an error about %s, got %v", c.args, c.want, err)
		}
	}
	if a, err := parseCron([]string{"list", "--nodes", "a:1"}); err != nil || a.namespace != "" {
		t.Errorf("list without a namespace: %+v %v", a, err)
	}
}

func TestCronJSONHasExactlyTheSharedKeys(t *testing.T) {
	timeout, retries := 30*time.Second, 2
	next := time.Date(2030, 1, 1, 16, 0, 0, 0, time.UTC)
	full := &taskring.CronRule{Namespace: "billing", Name: "nightly", TaskType: "reconcile", Schedule: "0 0 * * *",
		TimeZone: "Asia/Singapore", Payload: json.RawMessage(`{"scope":"all"}`), CatchUp: "latest", CatchUpLimit: 100,
		Overlap: "skip", Timeout: &timeout, MaxRetries: &retries, NextFireTime: next, LastFireTime: next.Add(-24 * time.Hour),
		LastFireTaskID: "cron-u-1", LastFireState: taskring.StateSucceeded, CreatedAt: next, UpdatedAt: next}
	got := decodeLine(t, full)
	if keys := sortedKeys(got); fmt.Sprint(keys) != fmt.Sprint(ruleKeys) {
		t.Fatalf("keys %v, want %v", keys, ruleKeys)
	}
	if p, ok := got["payload"].(map[string]any); !ok || p["scope"] != "all" {
		t.Errorf("payload is not the object: %#v", got["payload"])
	}
	if got["timeout_ms"] != 30000.0 || got["max_retries"] != 2.0 || got["last_fire_state"] != "succeeded" ||
		got["next_fire_time"] != "2030-01-01T16:00:00Z" || got["catch_up_limit"] != 100.0 || got["paused"] != false {
		t.Errorf("values: %v", got)
	}

	empty := decodeLine(t, &taskring.CronRule{Name: "n", Paused: true})
	for _, k := range []string{"timeout_ms", "max_retries", "last_fire_state", "next_fire_time", "last_fire_time",
		"created_at", "updated_at"} {
		if v, ok := empty[k]; !ok || v != nil {
			t.Errorf("%s: want null, got %#v (present %v)", k, v, ok)
		}
	}
	if empty["last_fire_task_id"] != "" || empty["paused"] != true {
		t.Errorf("empty rule: %v", empty)
	}
	if p, ok := empty["payload"].(map[string]any); !ok || len(p) != 0 {
		t.Errorf("no payload: %#v", empty["payload"])
	}
}

func decodeLine(t *testing.T, r *taskring.CronRule) map[string]any {
	t.Helper()
	b, err := json.Marshal(cronJSON(r))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// cronNode is a CronService on a TCP port, as the CLI dials one: it echoes a
// put rule back with the server-owned fields filled, refuses a zone as the
// dispatcher words it, and records the authorization each call carried.
type cronNode struct {
	pb.UnimplementedCronServiceServer
	auth []string
	put  *pb.CronRule
}

func (n *cronNode) seen(ctx context.Context) {
	md, _ := metadata.FromIncomingContext(ctx)
	n.auth = append(n.auth, strings.Join(md.Get("authorization"), "|"))
}

func (n *cronNode) CreateCronRule(ctx context.Context, r *pb.PutCronRuleRequest) (*pb.PutCronRuleResponse, error) {
	n.seen(ctx)
	n.put = r.GetRule()
	if r.GetRule().GetTimeZone() == "Mars/Olympus_Mons" {
		return nil, status.Error(codes.InvalidArgument, "rule.time_zone: unknown time zone 'Mars/Olympus_Mons'")
	}
	rule := proto.Clone(r.GetRule()).(*pb.CronRule)
	rule.CatchUp, rule.NextFireTime, rule.CreatedAt, rule.UpdatedAt = "latest", "2030-01-01T16:00:00+00:00",
		"2029-12-31T10:00:00+00:00", "2029-12-31T10:00:00+00:00"
	return &pb.PutCronRuleResponse{Rule: rule}, nil
}

func (n *cronNode) GetCronRule(ctx context.Context, r *pb.CronRuleRef) (*pb.CronRule, error) {
	n.seen(ctx)
	return nil, status.Errorf(codes.NotFound, "cron rule '%s/%s' not found", r.GetNamespace(), r.GetName())
}

func (n *cronNode) ListCronRules(ctx context.Context, r *pb.ListCronRulesRequest) (*pb.ListCronRulesResponse, error) {
	n.seen(ctx)
	if r.GetNamespace() != "billing" {
		return &pb.ListCronRulesResponse{}, nil
	}
	return &pb.ListCronRulesResponse{Rules: []*pb.CronRule{
		{Namespace: "billing", Name: "a", PayloadJson: "{}", LastFireTaskId: "cron-u-1", LastFireState: pb.TaskState_TASK_STATE_QUEUED},
		{Namespace: "billing", Name: "b", PayloadJson: `{"x":[1,2]}`, Paused: true},
	}}, nil
}

func serveCronNode(t *testing.T) (*cronNode, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &cronNode{}
	srv := grpc.NewServer()
	pb.RegisterCronServiceServer(srv, n)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return n, lis.Addr().String()
}

func TestRunCronPrintsOneLinePerRuleAndSendsTheToken(t *testing.T) {
	n, addr := serveCronNode(t)
	t.Setenv("TASKRING_TOKEN", "trk_cron-cli")
	var out bytes.Buffer
	err := runCron([]string{"create", "--nodes", addr, "--namespace", "billing", "--name", "nightly", "--type", "reconcile",
		"--schedule", "0 0 * * *", "--zone", "Asia/Singapore", "--payload", `{"scope": "all"}`, "--max-retries", "2"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if n.put.GetPayloadJson() != `{"scope":"all"}` || n.put.TimeoutMs != nil || n.put.GetMaxRetries() != 2 {
		t.Errorf("sent %v", n.put)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var created map[string]any
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &created) != nil {
		t.Fatalf("printed %q", out.String())
	}
	if created["catch_up"] != "latest" || created["timeout_ms"] != nil || created["max_retries"] != 2.0 ||
		created["next_fire_time"] != "2030-01-01T16:00:00Z" || created["last_fire_state"] != nil {
		t.Errorf("created: %v", created)
	}

	out.Reset()
	if err := runCron([]string{"list", "--nodes", addr, "--namespace", "billing"}, &out); err != nil {
		t.Fatal(err)
	}
	lines = strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"last_fire_state":"queued"`) ||
		!strings.Contains(lines[1], `"payload":{"x":[1,2]}`) || !strings.Contains(lines[1], `"paused":true`) {
		t.Errorf("list printed %q", out.String())
	}
	out.Reset()
	if err := runCron([]string{"list", "--nodes", addr, "--namespace", "nothing-here"}, &out); err != nil || out.Len() != 0 {
		t.Errorf("empty list printed %q (%v)", out.String(), err)
	}
	for i, a := range n.auth {
		if a != "Bearer trk_cron-cli" {
			t.Errorf("call %d sent authorization %q", i, a)
		}
	}
	if len(n.auth) != 3 {
		t.Errorf("%d calls, want 3", len(n.auth))
	}
}

func TestRunCronRefusalNamesTheCodeAndTheField(t *testing.T) {
	_, addr := serveCronNode(t)
	t.Setenv("TASKRING_TOKEN", "")
	var out bytes.Buffer
	err := runCron([]string{"create", "--nodes", addr, "--namespace", "billing", "--name", "bad", "--type", "reconcile",
		"--schedule", "0 0 * * *", "--zone", "Mars/Olympus_Mons"}, &out)
	if err == nil || out.Len() != 0 {
		t.Fatalf("refusal: err %v, printed %q", err, out.String())
	}
	if got := describe(err); got != "cron create: INVALID_ARGUMENT: rule.time_zone: unknown time zone 'Mars/Olympus_Mons'" {
		t.Errorf("stderr line %q", got)
	}
	err = runCron([]string{"get", "--nodes", addr, "--namespace", "billing", "--name", "no-such-rule"}, &out)
	if got := describe(err); got != "cron get: NOT_FOUND: cron rule 'billing/no-such-rule' not found" {
		t.Errorf("stderr line %q", got)
	}
	// Not a server's answer: printed as it is.
	if got := describe(fmt.Errorf("cron list needs --nodes")); got != "cron list needs --nodes" {
		t.Errorf("local error %q", got)
	}
}
