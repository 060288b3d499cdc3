package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	taskring "github.com/taskring/taskring/sdk/go"
)

type executorArgs struct {
	zk, namespace, behavior, listen, instanceID string
	types                                       []string
	maxInFlight                                 int
	tlsCert, tlsKey, tlsClientCA                string // --tls-*, "" for plaintext
}

// The environment variables the --tls-* flags default to (the SDK's ExecutorTLSFromEnv).
var tlsFlags = []struct{ flag, env, usage string }{
	{"tls-cert", taskring.EnvExecutorTLSCertFile, "serve TLS with this certificate chain (PEM)"},
	{"tls-key", taskring.EnvExecutorTLSKeyFile, "the key of --tls-cert (PEM)"},
	{"tls-client-ca", taskring.EnvExecutorTLSClientCAFile, "require mutual TLS: client certificates this CA signed (PEM)"},
}

// parseExecutor reads args; getenv gives the defaults of the --tls-* flags.
func parseExecutor(args []string, getenv func(string) string) (executorArgs, error) {
	fs := flag.NewFlagSet("executor", flag.ContinueOnError)
	var a executorArgs
	fs.StringVar(&a.zk, "zk", "", "ZooKeeper HOST:PORT[,HOST:PORT...][/chroot]")
	fs.StringVar(&a.namespace, "namespace", "", "namespace")
	types := fs.String("types", "", "task types, a,b")
	fs.StringVar(&a.behavior, "behavior", "ok", "ok | panic-once | fail-once | heartbeat | graph-results")
	fs.StringVar(&a.listen, "listen", "127.0.0.1:0", "listen address")
	fs.StringVar(&a.instanceID, "instance-id", "", "znode name (default hostname-pid-random)")
	fs.IntVar(&a.maxInFlight, "max-in-flight", 64, "handlers running at once")
	tlsValues := []*string{&a.tlsCert, &a.tlsKey, &a.tlsClientCA}
	for i, f := range tlsFlags {
		fs.StringVar(tlsValues[i], f.flag, getenv(f.env), f.usage+" (default $"+f.env+")")
	}
	if err := fs.Parse(args); err != nil {
		return a, err
	}
	if a.zk == "" || a.namespace == "" || *types == "" {
		return a, errors.New("executor needs --zk, --namespace and --types")
	}
	a.types = strings.Split(*types, ",")
	if _, err := behavior(a.behavior, nil); err != nil {
		return a, err
	}
	return a, checkTLSFlags(a)
}

// checkTLSFlags refuses --tls-* combinations the executor cannot serve, naming
// the flags and their variables (NewExecutor checks the files).
func checkTLSFlags(a executorArgs) error {
	name := func(i int) string { return "--" + tlsFlags[i].flag + " (" + tlsFlags[i].env + ")" }
	switch {
	case a.tlsCert != "" && a.tlsKey == "":
		return fmt.Errorf("%s is set but %s is not: give both or neither", name(0), name(1))
	case a.tlsKey != "" && a.tlsCert == "":
		return fmt.Errorf("%s is set but %s is not: give both or neither", name(1), name(0))
	case a.tlsClientCA != "" && a.tlsCert == "":
		return fmt.Errorf("%s needs %s and %s: mutual TLS needs the executor's own certificate", name(2), name(0), name(1))
	}
	return nil
}

// lines is the executor's stdout: one whole line at a time, from the outcome
// observer and the handlers' goroutines alike.
type lines struct {
	mu  sync.Mutex
	out io.Writer
}

func (l *lines) printf(format string, args ...any) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.out, format, args...)
}

// behavior is the handler of --behavior; out is where it prints (the
// heartbeat one's "stopped" line, graph-results' runs), nil to only check the name. The "once"
// behaviours key on the delivery's attempt number, not on memory, so they
// hold across executors.
func behavior(name string, out *lines) (taskring.HandlerFunc, error) {
	switch name {
	case "ok":
		return func(context.Context, *taskring.Task) error { return nil }, nil
	case "panic-once":
		return func(_ context.Context, t *taskring.Task) error {
			if t.Attempt <= 1 {
				panic(fmt.Sprintf("panic-once: attempt %d of %s", t.Attempt, t.TaskID))
			}
			return nil
		}, nil
	case "fail-once":
		return func(_ context.Context, t *taskring.Task) error {
			if t.Attempt <= 1 {
				return fmt.Errorf("fail-once: attempt %d of %s", t.Attempt, t.TaskID)
			}
			return nil
		}, nil
	case "heartbeat":
		return func(ctx context.Context, t *taskring.Task) error { return heartbeating(ctx, t, out) }, nil
	case "graph-results":
		return graphResults(out), nil
	}
	return nil, fmt.Errorf("--behavior must be ok, panic-once, fail-once, heartbeat or graph-results, got %q", name)
}

// heartbeatPayload is what the heartbeat behaviour reads from the payload:
// work for MS milliseconds, heartbeating every EveryMS (default 100).
type heartbeatPayload struct {
	MS      int64 `json:"ms"`
	EveryMS int64 `json:"every_ms"`
}

// heartbeatDetails are the heartbeat behaviour's details: how much of the
// work is done, which the next attempt resumes from.
type heartbeatDetails struct {
	DoneMS int64 `json:"done_ms"`
}

// heartbeating is the heartbeat behaviour: it "works" until payload.ms has
// passed, counted from where the previous attempt's last heartbeat left off,
// heartbeating {"done_ms": N} every payload.every_ms, then succeeds. Stopped
// (ctx cancelled: a CANCEL or LOST answer, the deadline, the executor's
// stop), it prints "stopped <task_id> <why>" and returns the cause.
func heartbeating(ctx context.Context, t *taskring.Task, out *lines) error {
	var p heartbeatPayload
	if err := t.Decode(&p); err != nil {
		return taskring.NonRetryable(fmt.Errorf("heartbeat: payload: %w", err))
	}
	if p.EveryMS <= 0 {
		p.EveryMS = 100
	}
	var from heartbeatDetails
	if _, err := t.DecodeLastHeartbeatDetails(&from); err != nil {
		return taskring.NonRetryable(fmt.Errorf("heartbeat: last details: %w", err))
	}
	start := time.Now()
	done := func() int64 { return from.DoneMS + time.Since(start).Milliseconds() }
	tick := time.NewTicker(time.Duration(p.EveryMS) * time.Millisecond)
	defer tick.Stop()
	for done() < p.MS {
		select {
		case <-ctx.Done():
			return stopped(ctx, t, out, context.Cause(ctx))
		case <-tick.C:
		}
		if err := t.Heartbeat(heartbeatDetails{DoneMS: min(done(), p.MS)}); err != nil {
			var stop *taskring.TaskStoppedError
			if errors.As(err, &stop) {
				return stopped(ctx, t, out, err)
			}
			return err
		}
	}
	return nil
}

// stopped prints the heartbeat behaviour's "stopped <task_id> <why>" line,
// why being "cancelled: <reason>" or "lost: <reason>" for a heartbeat's
// answer (as the STOPPED outcome's error), else the cause itself.
func stopped(ctx context.Context, t *taskring.Task, out *lines, cause error) error {
	why := cause.Error()
	var stop *taskring.TaskStoppedError
	if errors.As(cause, &stop) {
		why = "cancelled"
		if errors.Is(stop, taskring.ErrAttemptLost) {
			why = "lost"
		}
		if stop.Reason != "" {
			why += ": " + stop.Reason
		}
	}
	out.printf("stopped %s %s\n", t.TaskID, why)
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return cause
}

func runExecutor(args []string, out io.Writer) error {
	a, err := parseExecutor(args, os.Getenv)
	if err != nil {
		return err
	}
	stdout := &lines{out: out}
	h, _ := behavior(a.behavior, stdout)
	opts := []taskring.ExecutorOption{
		taskring.WithZooKeeper(a.zk), taskring.WithListenAddress(a.listen), taskring.WithMaxInFlight(a.maxInFlight),
		taskring.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil))),
		taskring.WithOutcomeObserver(func(o taskring.Outcome) {
			stdout.printf("%s %d %s\n", o.TaskID, o.Attempt, o.Kind)
		}),
	}
	if a.instanceID != "" {
		opts = append(opts, taskring.WithInstanceID(a.instanceID))
	}
	if a.tlsCert != "" {
		opts = append(opts, taskring.WithTLSFiles(a.tlsCert, a.tlsKey, a.tlsClientCA))
	}
	ex, err := taskring.NewExecutor(a.namespace, opts...)
	if err != nil {
		return err
	}
	for _, t := range a.types {
		if err := ex.Handle(strings.TrimSpace(t), h); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return ex.Serve(ctx)
}
