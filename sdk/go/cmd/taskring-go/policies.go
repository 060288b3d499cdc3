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

// policiesArgs is one `taskring-go policies ACTION` command line.
type policiesArgs struct {
	action              string
	nodes               []string
	namespace, taskType string
	policy              json.RawMessage // put
	reason              string          // put and delete
	ifRevision          *int64          // put and delete; nil when --if-revision is not given
	rpcTimeout          time.Duration
}

// parsePolicies reads the same command line as the Java and Node CLIs'
// `policies` (the policies client contract). The policy is passed on as the
// text given: whether it is a JSON object is the client's to judge (a
// *ValidationError on policy_json, nothing sent), and the reason, even when
// empty or missing, the server's (INVALID_ARGUMENT naming `reason`).
func parsePolicies(args []string) (policiesArgs, error) {
	if len(args) == 0 {
		return policiesArgs{}, errors.New("policies needs an action: put, get, delete or list")
	}
	a := policiesArgs{action: args[0]}
	fs := flag.NewFlagSet("policies "+a.action, flag.ContinueOnError)
	nodes := fs.String("nodes", "", "dispatcher addresses, host:port,...")
	fs.StringVar(&a.namespace, "namespace", "", "the task type's namespace (list: \"\" = every namespace)")
	fs.DurationVar(&a.rpcTimeout, "rpc-timeout", 10*time.Second, "bound of the call")
	var policy string
	var ifRevision int64
	switch a.action {
	case "put", "delete":
		fs.StringVar(&a.taskType, "type", "", "the task type")
		fs.StringVar(&a.reason, "reason", "", "why (required by the server: it goes in the audit trail)")
		fs.Int64Var(&ifRevision, "if-revision", 0, "refuse unless the API entry is at this revision (0: none yet)")
		if a.action == "put" {
			fs.StringVar(&policy, "policy", "", "the type's entry, a JSON object in the policies file's shape")
		}
	case "get":
		fs.StringVar(&a.taskType, "type", "", "the task type")
	case "list":
	default:
		return policiesArgs{}, fmt.Errorf("policies: unknown action %q (put, get, delete or list)", a.action)
	}
	if err := fs.Parse(args[1:]); err != nil {
		return policiesArgs{}, err
	}
	if fs.NArg() > 0 {
		return policiesArgs{}, fmt.Errorf("policies %s: unexpected argument %q", a.action, fs.Arg(0))
	}
	if *nodes == "" {
		return policiesArgs{}, fmt.Errorf("policies %s needs --nodes", a.action)
	}
	a.nodes = strings.Split(*nodes, ",")
	if a.action == "list" {
		return a, nil
	}
	if a.namespace == "" || a.taskType == "" {
		return policiesArgs{}, fmt.Errorf("policies %s needs --namespace and --type", a.action)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if a.action == "put" {
		if !given["policy"] {
			return policiesArgs{}, errors.New("policies put needs --policy")
		}
		a.policy = json.RawMessage(policy)
	}
	// Only a flag given on the command line is sent, so the write is conditional only when asked.
	if given["if-revision"] {
		a.ifRevision = &ifRevision
	}
	return a, nil
}

// runPolicies prints each policy the call returns as one JSON line
// (policyJSON); list prints one per policy, nothing for none.
func runPolicies(args []string, out io.Writer) error {
	a, err := parsePolicies(args)
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
	ctx, pols := context.Background(), client.Policies()
	var list []*taskring.TypePolicy
	var one *taskring.TypePolicy
	switch a.action {
	case "put":
		one, err = pols.Put(ctx, a.namespace, a.taskType, a.policy, a.reason, a.ifRevision)
	case "get":
		one, err = pols.Get(ctx, a.namespace, a.taskType)
	case "delete":
		one, err = pols.Delete(ctx, a.namespace, a.taskType, a.reason, a.ifRevision)
	case "list":
		list, err = pols.List(ctx, a.namespace)
	}
	if err != nil {
		return fmt.Errorf("policies %s: %w", a.action, err)
	}
	if one != nil {
		list = []*taskring.TypePolicy{one}
	}
	for _, p := range list {
		line, err := json.Marshal(policyJSON(p))
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintln(out, string(line)); err != nil {
			return err
		}
	}
	return nil
}

// policyJSON is the line every SDK's CLI prints for a type's policy: exactly
// namespace, task_type, policy (the object), source, revision (a number),
// updated_by, updated_at (RFC 3339, null when none) and file_policy (the
// object, null when the file has none).
func policyJSON(p *taskring.TypePolicy) map[string]any {
	var updatedAt, filePolicy any
	if !p.UpdatedAt.IsZero() {
		updatedAt = p.UpdatedAt.Format(time.RFC3339Nano)
	}
	if p.FilePolicy != nil {
		filePolicy = p.FilePolicy
	}
	policy := p.Policy
	if len(policy) == 0 {
		policy = json.RawMessage("{}")
	}
	return map[string]any{
		"namespace": p.Namespace, "task_type": p.TaskType, "policy": policy, "source": p.Source,
		"revision": p.Revision, "updated_by": p.UpdatedBy, "updated_at": updatedAt, "file_policy": filePolicy,
	}
}
