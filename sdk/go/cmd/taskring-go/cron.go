package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	taskring "github.com/taskring/taskring/sdk/go"
)

// cronArgs is one `taskring-go cron ACTION` command line.
type cronArgs struct {
	action          string
	nodes           []string
	namespace, name string
	spec            taskring.CronRuleSpec // create and update
	rpcTimeout      time.Duration
}

// parseCron reads the same command line as the Java and Node CLIs' `cron`
// (tests/integration/test_sdk_cron.py), which is dispatcher/cron/cli.py's with
// flags instead of positional NAMESPACE NAME.
func parseCron(args []string) (cronArgs, error) {
	if len(args) == 0 {
		return cronArgs{}, errors.New("cron needs an action: create, update, get, list, pause, resume or delete")
	}
	a := cronArgs{action: args[0]}
	fs := flag.NewFlagSet("cron "+a.action, flag.ContinueOnError)
	nodes := fs.String("nodes", "", "dispatcher addresses, host:port,...")
	fs.StringVar(&a.namespace, "namespace", "", "the rule's namespace (list: \"\" = every namespace)")
	fs.DurationVar(&a.rpcTimeout, "rpc-timeout", 10*time.Second, "bound of the call")
	put := a.action == "create" || a.action == "update"
	var payload string
	var timeoutMs, maxRetries, catchUpLimit int64
	s := &a.spec
	switch {
	case put:
		fs.StringVar(&a.name, "name", "", "the rule's name")
		fs.StringVar(&s.TaskType, "type", "", "the task each fire creates")
		fs.StringVar(&s.Schedule, "schedule", "", `5 fields, or 6 with seconds first; may start "CRON_TZ=Z "`)
		fs.StringVar(&s.TimeZone, "zone", "", "IANA time zone, e.g. Europe/London")
		fs.StringVar(&payload, "payload", "{}", "the fire task's payload, a JSON object")
		fs.StringVar(&s.OwnerTeam, "owner-team", "", "owning team")
		fs.StringVar(&s.Description, "description", "", "description")
		fs.StringVar(&s.CatchUp, "catch-up", "", "skip | latest | all")
		fs.Int64Var(&catchUpLimit, "catch-up-limit", 0, "most missed fires catch-up=all creates (0: server default)")
		fs.StringVar(&s.Overlap, "overlap", "", "allow | skip | queue_one")
		fs.StringVar(&s.OnRepeatedHour, "on-repeated-hour", "", "once | twice")
		fs.StringVar(&s.OnSkippedHour, "on-skipped-hour", "", "at_shift | skip")
		fs.Int64Var(&timeoutMs, "timeout-ms", -1, "each fire's per-attempt timeout in ms (unset: server default)")
		fs.Int64Var(&maxRetries, "max-retries", -1, "each fire's retries (unset: server default)")
	case a.action == "get" || a.action == "pause" || a.action == "resume" || a.action == "delete":
		fs.StringVar(&a.name, "name", "", "the rule's name")
	case a.action == "list":
	default:
		return cronArgs{}, fmt.Errorf("cron: unknown action %q (create, update, get, list, pause, resume or delete)", a.action)
	}
	if err := fs.Parse(args[1:]); err != nil {
		return cronArgs{}, err
	}
	if fs.NArg() > 0 {
		return cronArgs{}, fmt.Errorf("cron %s: unexpected argument %q", a.action, fs.Arg(0))
	}
	if *nodes == "" {
		return cronArgs{}, fmt.Errorf("cron %s needs --nodes", a.action)
	}
	a.nodes = strings.Split(*nodes, ",")
	if a.action == "list" {
		return a, nil
	}
	if a.namespace == "" || a.name == "" {
		return cronArgs{}, fmt.Errorf("cron %s needs --namespace and --name", a.action)
	}
	if !put {
		return a, nil
	}
	if s.TaskType == "" || s.Schedule == "" {
		return cronArgs{}, fmt.Errorf("cron %s needs --type and --schedule", a.action)
	}
	if !json.Valid([]byte(payload)) {
		return cronArgs{}, fmt.Errorf("--payload is not valid JSON: %s", payload)
	}
	s.Namespace, s.Name, s.Payload = a.namespace, a.name, json.RawMessage(payload)
	if catchUpLimit < 0 || catchUpLimit > 1<<32-1 {
		return cronArgs{}, fmt.Errorf("--catch-up-limit: %d is not a uint32", catchUpLimit)
	}
	s.CatchUpLimit = uint32(catchUpLimit)
	// Only a flag given on the command line is sent, so "unset" stays unset (null when read back).
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "timeout-ms":
			d := time.Duration(timeoutMs) * time.Millisecond
			s.Timeout = &d
		case "max-retries":
			n := int(maxRetries)
			s.MaxRetries = &n
		}
	})
	return a, nil
}

// runCron prints each rule the call returns as one JSON line (cronJSON); list prints one per rule.
func runCron(args []string, out io.Writer) error {
	a, err := parseCron(args)
	if err != nil {
		return err
	}
	opts := append([]taskring.ClientOption{taskring.WithNodes(a.nodes...), taskring.WithTimeout(a.rpcTimeout)},
		securityFromEnv(os.Getenv)...)
	client, err := taskring.NewClient(opts...)
	if err != nil {
		return err
	}
	defer client.Close()
	ctx, cron := context.Background(), client.Cron()
	var rules []*taskring.CronRule
	var rule *taskring.CronRule
	switch a.action {
	case "create":
		rule, err = cron.Create(ctx, a.spec)
	case "update":
		rule, err = cron.Update(ctx, a.spec)
	case "get":
		rule, err = cron.Get(ctx, a.namespace, a.name)
	case "pause":
		rule, err = cron.Pause(ctx, a.namespace, a.name)
	case "resume":
		rule, err = cron.Resume(ctx, a.namespace, a.name)
	case "delete":
		rule, err = cron.Delete(ctx, a.namespace, a.name)
	case "list":
		rules, err = cron.List(ctx, a.namespace)
	}
	if err != nil {
		return fmt.Errorf("cron %s: %w", a.action, err)
	}
	if rule != nil {
		rules = []*taskring.CronRule{rule}
	}
	for _, r := range rules {
		line, err := json.Marshal(cronJSON(r))
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintln(out, string(line)); err != nil {
			return err
		}
	}
	return nil
}

// cronJSON is the line every SDK's CLI prints for a rule: the payload as an
// object, unset numbers, empty times and no last fire as null, times in RFC 3339.
func cronJSON(r *taskring.CronRule) map[string]any {
	instant := func(t time.Time) any {
		if t.IsZero() {
			return nil
		}
		return t.Format(time.RFC3339Nano)
	}
	var timeoutMs, maxRetries, lastState any
	if r.Timeout != nil {
		timeoutMs = r.Timeout.Milliseconds()
	}
	if r.MaxRetries != nil {
		maxRetries = *r.MaxRetries
	}
	if r.LastFireState != "" {
		lastState = string(r.LastFireState)
	}
	payload := r.Payload
	if len(payload) == 0 {
		payload = json.RawMessage("{}")
	}
	return map[string]any{
		"namespace": r.Namespace, "name": r.Name, "task_type": r.TaskType, "schedule": r.Schedule,
		"time_zone": r.TimeZone, "payload": payload, "on_repeated_hour": r.OnRepeatedHour,
		"on_skipped_hour": r.OnSkippedHour, "catch_up": r.CatchUp, "catch_up_limit": r.CatchUpLimit,
		"overlap": r.Overlap, "owner_team": r.OwnerTeam, "description": r.Description,
		"timeout_ms": timeoutMs, "max_retries": maxRetries, "paused": r.Paused,
		"next_fire_time": instant(r.NextFireTime), "last_fire_time": instant(r.LastFireTime),
		"created_at": instant(r.CreatedAt), "updated_at": instant(r.UpdatedAt),
		"last_fire_task_id": r.LastFireTaskID, "last_fire_state": lastState,
	}
}
