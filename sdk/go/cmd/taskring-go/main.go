// Command taskring-go is a small CLI over the Go SDK, for cross-language tests:
//
//	taskring-go submit --nodes host:port,... --namespace NS --type T --payload JSON
//	                   [--delay-ms N] [--max-retries N] [--retry-schedule-ms 200,200]
//	                   [--timeout-ms N] [--task-id ID]
//	    prints the task_id as the only stdout line.
//
//	taskring-go get --nodes host:port,... --task-id ID
//	    prints the task as one JSON line (task_id, namespace, task_type, state,
//	    attempts, last_error).
//
//	taskring-go cron create|update --nodes host:port,... --namespace NS --name NAME --type T --schedule S
//	                 [--zone Z] [--payload JSON] [--owner-team X] [--description X]
//	                 [--catch-up P] [--catch-up-limit N] [--overlap P]
//	                 [--on-repeated-hour P] [--on-skipped-hour P]
//	                 [--timeout-ms N] [--max-retries N]
//	taskring-go cron get|pause|resume|delete --nodes host:port,... --namespace NS --name NAME
//	taskring-go cron list --nodes host:port,... [--namespace NS]
//	    prints each rule as one JSON line (list: one per rule, nothing for none);
//	    a refusal exits 1 with the status code and the server's message on stderr,
//	    e.g. "INVALID_ARGUMENT: rule.time_zone: ...".
//
//	taskring-go policies put --nodes host:port,... --namespace NS --type T --policy JSON --reason R [--if-revision N]
//	taskring-go policies get --nodes host:port,... --namespace NS --type T
//	taskring-go policies delete --nodes host:port,... --namespace NS --type T --reason R [--if-revision N]
//	taskring-go policies list --nodes host:port,... [--namespace NS]
//	    prints each type's policy as one JSON line (list: one per policy, nothing
//	    for none) with the keys namespace, task_type, policy, source, revision,
//	    updated_by, updated_at (null when none) and file_policy (null when none);
//	    a refusal exits 1 like cron's, e.g.
//	    "INVALID_ARGUMENT: policy_json.concurrency.per_type: ...". A --policy
//	    that is not a JSON object is refused before anything is sent
//	    ("policy_json: must be a JSON object, ...").
//
//	taskring-go graph submit --nodes host:port,... --file GRAPH.json
//	taskring-go graph get --nodes host:port,... --namespace NS --graph-id ID [--with-results]
//	taskring-go graph cancel --nodes host:port,... --namespace NS --graph-id ID [--mode graceful|immediate] [--reason TEXT]
//	    GRAPH.json is {"namespace", "graph_id", "tasks": [{"key", "task_type",
//	    "payload", "after": [{"key", "on_failure":
//	    "skip"|"ignore"|"continue"}], "join": {"rule", "at_least"}}]}, sent as
//	    it is (the server judges it whole).
//	    submit prints {"graph_id", "duplicate", "tasks": {key: {"task_id",
//	    "state", "slot"}}}; get prints {"graph_id", "namespace", "state",
//	    "counts", "nodes": {key: {"task_id", "state", "attempts", "reason",
//	    "waiting", "result", "depends_on": [{"parent_key", "on_failure",
//	    "outcome"}]}}}, tasks in their order; cancel (graceful by default)
//	    prints {"cancelled", "running": [key, ...]}: how many tasks it
//	    cancelled and the running ones left to finish. One JSON line; a
//	    refusal exits 1 like cron's, e.g. "graph submit: INVALID_ARGUMENT:
//	    tasks[0].depends_on[0]: ...". A bad graph command line (a --mode other
//	    than graceful or immediate, a missing flag) exits 2, nothing sent.
//
//	submit, get, cron, policies and graph read TASKRING_TOKEN (sent as `authorization: Bearer ...`) and,
//	for TLS, TASKRING_CA_FILE [TASKRING_CLIENT_CERT_FILE TASKRING_CLIENT_KEY_FILE]
//	from the environment, like the Python commands; never from flags.
//
//	taskring-go executor --zk HOST:PORT[/chroot] --namespace NS --types a,b
//	                     --behavior ok|panic-once|fail-once|heartbeat|graph-results [--listen 127.0.0.1:0]
//	                     [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]]
//	    registers, serves until SIGTERM/SIGINT, prints "task_id attempt outcome"
//	    per delivery. panic-once panics on attempt 1 and succeeds from attempt 2;
//	    fail-once returns an error on attempt 1 likewise. heartbeat works for
//	    payload.ms, heartbeating {"done_ms": N} every payload.every_ms (default
//	    100), resuming from the previous attempt's last details, then succeeds;
//	    stopped (a CANCEL or LOST answer, the deadline) it prints
//	    "stopped <task_id> cancelled: <reason>" (lost: ..., or the ctx's cause)
//	    and returns. graph-results gives {"type": <task type>, "saw": {key:
//	    {"outcome", "result"}}} from its parents' results as its result, prints
//	    {"graph_run": <task type>, "task_id", "parents": <the same saw>} per
//	    run, and fails non-retryably when the payload says {"fail": true}.
//	    --tls-cert/--tls-key
//	    serve TLS to the dispatchers, --tls-client-ca requires mutual TLS; they
//	    default to TASKRING_EXECUTOR_TLS_CERT_FILE, TASKRING_EXECUTOR_TLS_KEY_FILE
//	    and TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE.
//
// Logs go to stderr, so stdout carries only the lines above.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	taskring "github.com/taskring/taskring/sdk/go"
	"google.golang.org/grpc/codes"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: taskring-go submit|get|cron|policies|graph|executor [flags]")
		return 2
	}
	var err error
	switch args[0] {
	case "submit":
		err = runSubmit(args[1:], os.Stdout)
	case "get":
		err = runGet(args[1:], os.Stdout)
	case "cron":
		err = runCron(args[1:], os.Stdout)
	case "policies":
		err = runPolicies(args[1:], os.Stdout)
	case "graph":
		err = runGraph(args[1:], os.Stdout)
	case "executor":
		err = runExecutor(args[1:], os.Stdout)
	default:
		fmt.Fprintf(os.Stderr, "taskring-go: unknown mode %q (submit, get, cron, policies, graph or executor)\n", args[0])
		return 2
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "taskring-go:", describe(err))
		var usage *usageError
		if errors.As(err, &usage) {
			return 2
		}
		return 1
	}
	return 0
}

// codeNames are gRPC's canonical status names, which the Python, Java and
// Node CLIs print; Go's codes.Code.String() is CamelCase ("NotFound").
var codeNames = map[codes.Code]string{
	codes.OK: "OK", codes.Canceled: "CANCELLED", codes.Unknown: "UNKNOWN", codes.InvalidArgument: "INVALID_ARGUMENT",
	codes.DeadlineExceeded: "DEADLINE_EXCEEDED", codes.NotFound: "NOT_FOUND", codes.AlreadyExists: "ALREADY_EXISTS",
	codes.PermissionDenied: "PERMISSION_DENIED", codes.ResourceExhausted: "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION", codes.Aborted: "ABORTED", codes.OutOfRange: "OUT_OF_RANGE",
	codes.Unimplemented: "UNIMPLEMENTED", codes.Internal: "INTERNAL", codes.Unavailable: "UNAVAILABLE",
	codes.DataLoss: "DATA_LOSS", codes.Unauthenticated: "UNAUTHENTICATED",
}

// describe is the stderr line of a failed command: for a server's refusal,
// "<what failed>: CODE_NAME: <the server's message>" (which names the field).
func describe(err error) string {
	var rpc *taskring.RPCError
	if !errors.As(err, &rpc) {
		return err.Error()
	}
	name, ok := codeNames[rpc.Code]
	if !ok {
		name = rpc.Code.String()
	}
	what := strings.TrimSuffix(strings.TrimSuffix(err.Error(), rpc.Error()), ": ")
	line := name + ": " + rpc.Details
	if what != "" {
		line = what + ": " + line
	}
	return line
}
