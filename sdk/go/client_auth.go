package taskring

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
)

// authorizationKey is the metadata a secured dispatcher reads (docs/security.md).
const authorizationKey = "authorization"

// WithToken sends `authorization: Bearer <secret>` with every call, which a
// node with a tokens file (TASKRING_TOKENS_FILE) requires. It works on
// plaintext and TLS connections alike (a unary interceptor, not
// grpc.PerRPCCredentials, which refuses plaintext), but a token on a
// plaintext connection is readable on the network: use WithTLS beyond the
// machine. The secret is never logged nor put in an error. An empty secret
// makes NewClient fail.
func WithToken(secret string) ClientOption {
	return func(c *clientConfig) {
		c.token = secret
		c.tokenSet = true
	}
}

// WithTLS dials every node over TLS, verifying its certificate against the
// CA in caFile (PEM). certFile and keyFile (PEM, both or neither) add a client
// certificate for mutual TLS (TASKRING_TLS_CLIENT_CA_FILE on the node). The
// files are read by NewClient, which returns the error of one it cannot use.
func WithTLS(caFile, certFile, keyFile string) ClientOption {
	return func(c *clientConfig) { c.tls = &tlsFiles{ca: caFile, cert: certFile, key: keyFile} }
}

type tlsFiles struct{ ca, cert, key string }

// tokenInterceptor adds the token to the outgoing metadata of every unary call.
func tokenInterceptor(secret string) grpc.UnaryClientInterceptor {
	bearer := "Bearer " + secret
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
		invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		return invoker(metadata.AppendToOutgoingContext(ctx, authorizationKey, bearer), method, req, reply, cc, opts...)
	}
}

// securityOptions are the dial options of WithToken and WithTLS (none when neither is given).
func securityOptions(cfg *clientConfig) ([]grpc.DialOption, error) {
	var opts []grpc.DialOption
	if cfg.tokenSet {
		if cfg.token == "" {
			return nil, errors.New("taskring: WithToken: the token is empty")
		}
		opts = append(opts, grpc.WithChainUnaryInterceptor(tokenInterceptor(cfg.token)))
	}
	if cfg.tls != nil {
		creds, err := tlsCredentials(*cfg.tls)
		if err != nil {
			return nil, err
		}
		opts = append(opts, grpc.WithTransportCredentials(creds))
	}
	return opts, nil
}

func tlsCredentials(f tlsFiles) (credentials.TransportCredentials, error) {
	if f.ca == "" {
		return nil, errors.New("taskring: WithTLS: a CA file is required")
	}
	if (f.cert == "") != (f.key == "") {
		return nil, errors.New("taskring: WithTLS: give both a client certificate and its key, or neither")
	}
	pem, err := os.ReadFile(f.ca)
	if err != nil {
		return nil, fmt.Errorf("taskring: WithTLS: the CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("taskring: WithTLS: no PEM certificate in the CA file %s", f.ca)
	}
	conf := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if f.cert != "" {
		pair, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return nil, fmt.Errorf("taskring: WithTLS: the client certificate %s or its key: %w", f.cert, err)
		}
		conf.Certificates = []tls.Certificate{pair}
	}
	return credentials.NewTLS(conf), nil
}
