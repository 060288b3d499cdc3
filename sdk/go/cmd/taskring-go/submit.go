package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	taskring "github.com/taskring/taskring/sdk/go"
)

type submitArgs struct {
	nodes      []string
	spec       taskring.TaskSpec
	rpcTimeout time.Duration
}

func parseSubmit(args []string) (submitArgs, error) {
	fs := flag.NewFlagSet("submit", flag.ContinueOnError)
	nodes := fs.String("nodes", "", "dispatcher addresses, host:port,...")
	ns := fs.String("namespace", "", "namespace")
	typ := fs.String("type", "", "task type")
	payload := fs.String("payload", "{}", "payload, a JSON object")
	taskID := fs.String("task-id", "", "task id (makes the submit idempotent)")
	delayMs := fs.Int64("delay-ms", 0, "delay in milliseconds")
	timeoutMs := fs.Int64("timeout-ms", 0, "per-attempt timeout in milliseconds (0: server default)")
	maxRetries := fs.Int("max-retries", -1, "retries after the first attempt (-1: server default)")
	schedule := fs.String("retry-schedule-ms", "", "tiered retry waits in ms, e.g. 200,200")
	rpcTimeout := fs.Duration("rpc-timeout", 10*time.Second, "bound of the call")
	if err := fs.Parse(args); err != nil {
		return submitArgs{}, err
	}
	if *nodes == "" || *ns == "" || *typ == "" {
		return submitArgs{}, errors.New("submit needs --nodes, --namespace and --type")
	}
	if !json.Valid([]byte(*payload)) {
		return submitArgs{}, fmt.Errorf("--payload is not valid JSON: %s", *payload)
	}
	a := submitArgs{nodes: strings.Split(*nodes, ","), rpcTimeout: *rpcTimeout, spec: taskring.TaskSpec{
		Namespace: *ns, TaskType: *typ, Payload: json.RawMessage(*payload), TaskID: *taskID,
		Delay: time.Duration(*delayMs) * time.Millisecond, Timeout: time.Duration(*timeoutMs) * time.Millisecond,
	}}
	if *maxRetries >= 0 {
		a.spec.MaxRetries = taskring.Retries(*maxRetries)
	}
	if *schedule != "" {
		var waits []time.Duration
		for _, s := range strings.Split(*schedule, ",") {
			ms, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
			if err != nil {
				return submitArgs{}, fmt.Errorf("--retry-schedule-ms: %q is not a number of ms", s)
			}
			waits = append(waits, time.Duration(ms)*time.Millisecond)
		}
		a.spec.RetryPolicy = taskring.TieredRetry(waits...)
	}
	return a, nil
}

func runSubmit(args []string, out io.Writer) error {
	a, err := parseSubmit(args)
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
	res, err := client.Submit(context.Background(), a.spec)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(out, res.TaskID)
	return err
}
