package taskring

import (
	"time"

	"google.golang.org/grpc"
)

// ClientOption configures NewClient.
type ClientOption func(*clientConfig)

type clientConfig struct {
	nodes   []string
	timeout time.Duration
	dial    []grpc.DialOption

	token    string // WithToken (client_auth.go)
	tokenSet bool
	tls      *tlsFiles // WithTLS
}

// maxMessageBytes: batches of thousands of tasks exceed gRPC's 4 MiB default
// (the same limit as the Python SDK and the dispatcher).
const maxMessageBytes = 64 * 1024 * 1024

// defaultRPCTimeout bounds a call whose context has no deadline, like Python's rpc_timeout_s=10.
const defaultRPCTimeout = 10 * time.Second

// WithNodes adds dispatcher addresses ("host:port"). Any node accepts any
// task; calls go round-robin across them.
func WithNodes(addrs ...string) ClientOption {
	return func(c *clientConfig) { c.nodes = append(c.nodes, addrs...) }
}

// WithTimeout bounds every call (10s by default). A shorter deadline on the
// call's context wins; 0 means no bound beyond the context's.
func WithTimeout(d time.Duration) ClientOption {
	return func(c *clientConfig) { c.timeout = d }
}

// WithDialOptions adds gRPC dial options, e.g. TLS credentials. Without
// transport credentials among them the connection is plaintext.
func WithDialOptions(opts ...grpc.DialOption) ClientOption {
	return func(c *clientConfig) { c.dial = append(c.dial, opts...) }
}
