package taskring

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"time"

	pb "github.com/taskring/taskring/sdk/go/pb/taskring/v1"
	"google.golang.org/grpc"
)

// Executor runs the handlers of one namespace for the dispatchers: a gRPC
// server implementing ExecutorService, announced in ZooKeeper. Register
// handlers, Start, and Stop when done; it starts once.
//
// Lifecycle (as sdk/python/taskring/executor.py): Start listens, then
// registers, so a dispatcher never finds an executor that cannot answer; Stop
// undoes it in reverse: stop taking new calls, deregister, let in-flight work
// finish until its ctx ends, then hand what is left back as retryable.
type Executor struct {
	namespace string
	cfg       executorConfig
	handlers  map[string]HandlerFunc

	mu       sync.Mutex
	state    int // stateNew, stateRunning, stateStopped
	listener net.Listener
	server   *grpc.Server
	served   chan struct{}
	runner   *runner
	gate     *gate
	abort    context.CancelFunc
	reg      *registration
	address  string
}

const (
	stateNew = iota
	stateRunning
	stateStopped
)

// The names the dispatcher and the Python SDK accept.
var (
	namespacePattern  = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	taskTypePattern   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)
	instanceIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)
)

// NewExecutor configures an executor for namespace; nothing runs until Start.
func NewExecutor(namespace string, opts ...ExecutorOption) (*Executor, error) {
	cfg := executorConfig{
		zkSessionTimeout: 10 * time.Second, listen: "127.0.0.1:0", maxInFlight: 64, stopGrace: 10 * time.Second,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if !namespacePattern.MatchString(namespace) {
		return nil, invalid("namespace", "must match %s, got %q", namespacePattern, namespace)
	}
	if cfg.maxInFlight < 1 {
		return nil, invalid("max_in_flight", "must be at least 1, got %d", cfg.maxInFlight)
	}
	if cfg.zkSessionTimeout <= 0 {
		return nil, invalid("zk_session_timeout", "must be positive")
	}
	if cfg.instanceID == "" {
		cfg.instanceID = defaultInstanceID()
	}
	if !instanceIDPattern.MatchString(cfg.instanceID) {
		return nil, invalid("instance_id", "must match %s, got %q", instanceIDPattern, cfg.instanceID)
	}
	if cfg.logger == nil {
		cfg.logger = slog.Default()
	}
	if cfg.tls != nil {
		creds, err := cfg.tls.credentials()
		if err != nil {
			return nil, err
		}
		cfg.tlsCreds = creds
	}
	return &Executor{namespace: namespace, cfg: cfg, handlers: map[string]HandlerFunc{}}, nil
}

// Handle registers fn for taskType. Register every handler before Start: the
// registration lists the task types.
func (e *Executor) Handle(taskType string, fn HandlerFunc) error {
	if !taskTypePattern.MatchString(taskType) {
		return invalid("task_type", "must match %s, got %q", taskTypePattern, taskType)
	}
	if fn == nil {
		return invalid("task_type", "the handler for %q is nil", taskType)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state != stateNew {
		return errors.New("taskring: register handlers before Start: the registration lists the task types")
	}
	if _, dup := e.handlers[taskType]; dup {
		return invalid("task_type", "%q already has a handler", taskType)
	}
	e.handlers[taskType] = fn
	return nil
}

// TaskTypes are the task types with a handler, sorted.
func (e *Executor) TaskTypes() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	types := make([]string, 0, len(e.handlers))
	for t := range e.handlers {
		types = append(types, t)
	}
	sort.Strings(types)
	return types
}

// Namespace is the namespace this executor serves.
func (e *Executor) Namespace() string { return e.namespace }

// InstanceID names the executor's znode.
func (e *Executor) InstanceID() string { return e.cfg.instanceID }

// Address is the host:port dispatchers call; empty before Start.
func (e *Executor) Address() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.address
}

// RegistrationPath is the znode the executor holds, relative to the chroot; "" without ZooKeeper.
func (e *Executor) RegistrationPath() string {
	if e.cfg.zk == "" {
		return ""
	}
	return executorsRoot + "/" + e.namespace + "/" + e.cfg.instanceID
}

// InFlight is the number of handlers running now, including timed-out ones that have not returned.
func (e *Executor) InFlight() int {
	if r := e.currentRunner(); r != nil {
		return int(r.inFlight.Load())
	}
	return 0
}

// Waiting is the number of deliveries waiting for a free slot (max_in_flight reached).
func (e *Executor) Waiting() int {
	if r := e.currentRunner(); r != nil {
		return int(r.waiting.Load())
	}
	return 0
}

func (e *Executor) currentRunner() *runner {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.runner
}

// Start listens, serves and registers; ctx bounds the ZooKeeper connection
// (10s when it has no deadline). On error nothing is left running.
func (e *Executor) Start(ctx context.Context) error {
	e.mu.Lock()
	if e.state != stateNew {
		e.mu.Unlock()
		return errors.New("taskring: an Executor starts once")
	}
	if len(e.handlers) == 0 {
		e.mu.Unlock()
		return errors.New("taskring: no handlers registered")
	}
	e.state = stateRunning
	e.mu.Unlock()
	if err := e.startServer(); err != nil {
		_ = e.Stop(context.Background())
		return err
	}
	if e.cfg.zk != "" {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
		}
		data := znodeData(registrationData{
			Address: e.Address(), Namespace: e.namespace, TaskTypes: e.TaskTypes(),
			MaxInFlight: e.cfg.maxInFlight, PID: processID(),
		})
		reg, err := newRegistration(e.cfg.zk, e.namespace, e.cfg.instanceID, data, e.cfg.zkSessionTimeout, e.cfg.logger)
		if err == nil {
			err = reg.start(ctx)
		}
		if err != nil {
			_ = e.Stop(context.Background())
			return err
		}
		e.mu.Lock()
		e.reg = reg
		e.mu.Unlock()
	}
	attrs := []any{"namespace", e.namespace, "instance", e.cfg.instanceID, "address", e.Address(), "task_types", e.TaskTypes()}
	if e.cfg.tls != nil {
		attrs = append(attrs, "transport", e.cfg.tls.mode())
	}
	e.cfg.logger.Info("taskring: executor serving", attrs...)
	return nil
}

func (e *Executor) startServer() error {
	lis, err := net.Listen("tcp", e.cfg.listen)
	if err != nil {
		return fmt.Errorf("taskring: executor cannot listen on %s: %w", e.cfg.listen, err)
	}
	abortCtx, abort := context.WithCancel(context.Background())
	handlers := make(map[string]HandlerFunc, len(e.handlers))
	for k, v := range e.handlers {
		handlers[k] = v
	}
	r := &runner{
		namespace: e.namespace, handlers: handlers, slots: make(chan struct{}, e.cfg.maxInFlight),
		abort: abortCtx, observe: e.cfg.observe, log: e.cfg.logger,
	}
	g := &gate{}
	opts := append([]grpc.ServerOption{
		grpc.MaxRecvMsgSize(maxMessageBytes), grpc.MaxSendMsgSize(maxMessageBytes),
	}, e.cfg.serverOpts...)
	if e.cfg.tlsCreds != nil {
		opts = append(opts, grpc.Creds(e.cfg.tlsCreds)) // last: gRPC uses the last grpc.Creds, so WithTLSFiles wins
	}
	srv := grpc.NewServer(opts...)
	pb.RegisterExecutorServiceServer(srv, &executorService{runner: r, gate: g})
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			e.cfg.logger.Error("taskring: executor server failed", "err", err)
		}
	}()
	e.mu.Lock()
	e.listener, e.server, e.served, e.runner, e.gate, e.abort = lis, srv, served, r, g, abort
	e.address = advertisedAddress(lis.Addr().(*net.TCPAddr), e.cfg.advertiseHost)
	e.mu.Unlock()
	return nil
}

// Stop stops taking new deliveries, deregisters from ZooKeeper, and waits for
// in-flight work until ctx ends. Past that, every delivery still running is
// answered RETRYABLE_FAILURE ("handed back") so the dispatcher re-queues it
// at once, its handler's ctx is cancelled, and Stop returns an error wrapping
// ctx.Err(). Safe before Start and twice.
func (e *Executor) Stop(ctx context.Context) error {
	e.mu.Lock()
	previous := e.state
	e.state = stateStopped
	srv, served, g, abort, reg := e.server, e.served, e.gate, e.abort, e.reg
	e.mu.Unlock()
	if previous != stateRunning || srv == nil {
		return nil
	}
	// First deregister, so dispatchers stop choosing this executor; keep
	// answering meanwhile (a dispatcher's view lags), as Python does. Then turn
	// new calls away: UNAVAILABLE, which the dispatcher retries elsewhere.
	if reg != nil {
		reg.stop(ctx)
	}
	drained := g.close()
	var err error
	select {
	case <-drained:
	case <-ctx.Done():
		abort() // hand back what is still running; every Execute answers promptly
		<-drained
		err = fmt.Errorf("taskring: executor stop: in-flight deliveries handed back as retryable: %w", ctx.Err())
	}
	abort()
	// No call is in progress any more, so a graceful stop only closes connections.
	stopped := make(chan struct{})
	go func() { srv.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(time.Second):
		srv.Stop()
	}
	<-served
	e.cfg.logger.Info("taskring: executor stopped", "namespace", e.namespace, "instance", e.cfg.instanceID)
	return err
}

// Serve starts the executor (unless started), serves until ctx ends, then
// stops with the WithStopGrace budget. Pair it with signal.NotifyContext for
// SIGTERM.
func (e *Executor) Serve(ctx context.Context) error {
	e.mu.Lock()
	fresh := e.state == stateNew
	e.mu.Unlock()
	if fresh {
		if err := e.Start(ctx); err != nil {
			return err
		}
	}
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), e.cfg.stopGrace)
	defer cancel()
	return e.Stop(stopCtx)
}

func advertisedAddress(addr *net.TCPAddr, host string) string {
	if host == "" {
		if addr.IP == nil || addr.IP.IsUnspecified() {
			host, _ = os.Hostname()
		} else {
			host = addr.IP.String()
		}
	}
	return net.JoinHostPort(host, strconv.Itoa(addr.Port))
}

var unsafeIDChars = regexp.MustCompile(`[^A-Za-z0-9._-]`)

func defaultInstanceID() string {
	host, _ := os.Hostname()
	host = unsafeIDChars.ReplaceAllString(host, "-")
	if host == "" || !instanceIDPattern.MatchString(host) {
		host = "host"
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}
