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
//	submit and get read TASKRING_TOKEN (sent as `authorization: Bearer ...`) and,
//	for TLS, TASKRING_CA_FILE [TASKRING_CLIENT_CERT_FILE TASKRING_CLIENT_KEY_FILE]
//	from the environment, like the Python commands; never from flags.
//
//	taskring-go executor --zk HOST:PORT[/chroot] --namespace NS --types a,b
//	                     --behavior ok|panic-once|fail-once [--listen 127.0.0.1:0]
//	    registers, serves until SIGTERM/SIGINT, prints "task_id attempt outcome"
//	    per delivery. panic-once panics on attempt 1 and succeeds from attempt 2;
//	    fail-once returns an error on attempt 1 likewise.
//
// Logs go to stderr, so stdout carries only the lines above.
package main

import (
	"fmt"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: taskring-go submit|get|executor [flags]")
		return 2
	}
	var err error
	switch args[0] {
	case "submit":
		err = runSubmit(args[1:], os.Stdout)
	case "get":
		err = runGet(args[1:], os.Stdout)
	case "executor":
		err = runExecutor(args[1:], os.Stdout)
	default:
		fmt.Fprintf(os.Stderr, "taskring-go: unknown mode %q (submit, get or executor)\n", args[0])
		return 2
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "taskring-go:", err)
		return 1
	}
	return 0
}
