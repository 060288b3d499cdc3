package taskring

import (
	"log/slog"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// ExecutorOption configures NewExecutor.
type ExecutorOption func(*executorConfig)

type executorConfig struct {
	zk               string
	zkSessionTimeout time.Duration
	listen           string
	advertiseHost    string
	maxInFlight      int
	instanceID       string
	stopGrace        time.Duration
	serverOpts       []grpc.ServerOption
	tls              *executorTLSFiles // WithTLSFiles, ExecutorTLSFromEnv (executor_tls.go)
	tlsCreds         credentials.TransportCredentials
	logger           *slog.Logger
	observe          func(Outcome)
}

// WithZooKeeper registers the executor in ZooKeeper; connect is a host list
// with an optional chroot, "zk1:2181,zk2:2181/taskring" (created if missing).
// Without it the executor serves without registering (tests, or dispatchers
// pointed at it some other way).
func WithZooKeeper(connect string) ExecutorOption {
	return func(c *executorConfig) { c.zk = connect }
}

// WithZKSessionTimeout sets the ZooKeeper session timeout (10s by default).
func WithZKSessionTimeout(d time.Duration) ExecutorOption {
	return func(c *executorConfig) { c.zkSessionTimeout = d }
}

// WithListenAddress is where the gRPC server listens ("127.0.0.1:0" by
// default, as Python: any free port on loopback).
func WithListenAddress(addr string) ExecutorOption {
	return func(c *executorConfig) { c.listen = addr }
}

// WithAdvertiseHost is the host written into ZooKeeper when it differs from
// the listen host (default: the listen host, or the machine's name when that
// is a wildcard).
func WithAdvertiseHost(host string) ExecutorOption {
	return func(c *executorConfig) { c.advertiseHost = host }
}

// WithMaxInFlight caps the handlers running at once across all batches (64 by default).
func WithMaxInFlight(n int) ExecutorOption {
	return func(c *executorConfig) { c.maxInFlight = n }
}

// WithInstanceID names the znode (default: hostname-pid-random).
func WithInstanceID(id string) ExecutorOption {
	return func(c *executorConfig) { c.instanceID = id }
}

// WithStopGrace is how long Serve lets in-flight work finish once its
// context ends (10s by default). Stop takes its own context instead.
func WithStopGrace(d time.Duration) ExecutorOption {
	return func(c *executorConfig) { c.stopGrace = d }
}

// WithServerOptions adds gRPC server options. TLS from PEM files is
// WithTLSFiles; grpc.Creds here still works for other credentials, but do not
// combine the two (WithTLSFiles wins).
func WithServerOptions(opts ...grpc.ServerOption) ExecutorOption {
	return func(c *executorConfig) { c.serverOpts = append(c.serverOpts, opts...) }
}

// WithLogger sets the logger (slog.Default() by default).
func WithLogger(l *slog.Logger) ExecutorOption {
	return func(c *executorConfig) { c.logger = l }
}

// WithOutcomeObserver calls fn with every outcome as it is reported. fn runs
// on the delivery's goroutine: keep it quick.
func WithOutcomeObserver(fn func(Outcome)) ExecutorOption {
	return func(c *executorConfig) { c.observe = fn }
}
