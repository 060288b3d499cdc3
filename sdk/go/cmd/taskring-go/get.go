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

// runGet prints the task as one JSON line: task_id, namespace, task_type, state, attempts, last_error,
// waiting (why it has not started: "" unless its owner holds it at a limit).
func runGet(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("get", flag.ContinueOnError)
	nodes := fs.String("nodes", "", "dispatcher addresses, host:port,...")
	taskID := fs.String("task-id", "", "task id")
	rpcTimeout := fs.Duration("rpc-timeout", 10*time.Second, "bound of the call")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *nodes == "" || *taskID == "" {
		return errors.New("get needs --nodes and --task-id")
	}
	opts := append([]taskring.ClientOption{taskring.WithNodes(strings.Split(*nodes, ",")...),
		taskring.WithTimeout(*rpcTimeout)}, securityFromEnv(os.Getenv)...)
	client, err := taskring.NewClient(opts...)
	if err != nil {
		return err
	}
	defer client.Close()
	info, err := client.Get(context.Background(), *taskID)
	if err != nil {
		return err
	}
	line, err := json.Marshal(map[string]any{"task_id": info.TaskID, "namespace": info.Namespace,
		"task_type": info.TaskType, "state": string(info.State), "attempts": info.Attempts, "last_error": info.LastError,
		"waiting": info.Waiting})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(out, string(line))
	return err
}
