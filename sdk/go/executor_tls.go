package taskring

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"strings"

	"google.golang.org/grpc/credentials"
)

// The environment variables of ExecutorTLSFromEnv (and the defaults of the
// --tls-* flags of `taskring-go executor`), the same in every SDK.
const (
	EnvExecutorTLSCertFile     = "TASKRING_EXECUTOR_TLS_CERT_FILE"
	EnvExecutorTLSKeyFile      = "TASKRING_EXECUTOR_TLS_KEY_FILE"
	EnvExecutorTLSClientCAFile = "TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE"
)

// WithTLSFiles serves TLS (1.2 or later) with the certificate chain in
// certFile and its private key in keyFile (PEM). With clientCAFile (PEM) the
// executor requires mutual TLS: a dispatcher that does not show a client
// certificate this CA signed fails the handshake; "" means no client
// certificate is asked for. NewExecutor reads the files and returns the
// error of one it cannot use, naming it, so nothing starts or registers.
//
// The registration in ZooKeeper is unchanged: the dispatchers are told to use
// TLS on their side (TASKRING_EXECUTOR_CA_FILE, see the README).
//
// WithTLSFiles wins over transport credentials given with
// WithServerOptions(grpc.Creds(...)): gRPC server options are opaque, so
// NewExecutor cannot tell that both were given. Use one or the other.
func WithTLSFiles(certFile, keyFile, clientCAFile string) ExecutorOption {
	return func(c *executorConfig) {
		c.tls = &executorTLSFiles{cert: certFile, key: keyFile, clientCA: clientCAFile,
			certName: "WithTLSFiles certFile", keyName: "WithTLSFiles keyFile", clientCAName: "WithTLSFiles clientCAFile"}
	}
}

// ExecutorTLSFromEnv is WithTLSFiles from TASKRING_EXECUTOR_TLS_CERT_FILE,
// TASKRING_EXECUTOR_TLS_KEY_FILE and TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE
// (mutual TLS). With none of them set it returns an option that changes
// nothing (plaintext); a cert without a key, a key without a cert, or a client
// CA without both is an error naming the variables. NewExecutor never reads
// the environment by itself: pass the option explicitly.
// Errors about the files themselves come from NewExecutor and name the variable.
func ExecutorTLSFromEnv() (ExecutorOption, error) {
	return executorTLSFromEnv(os.Getenv)
}

func executorTLSFromEnv(getenv func(string) string) (ExecutorOption, error) {
	f := executorTLSFiles{
		cert: getenv(EnvExecutorTLSCertFile), key: getenv(EnvExecutorTLSKeyFile), clientCA: getenv(EnvExecutorTLSClientCAFile),
		certName: EnvExecutorTLSCertFile, keyName: EnvExecutorTLSKeyFile, clientCAName: EnvExecutorTLSClientCAFile,
	}
	if f.cert == "" && f.key == "" && f.clientCA == "" {
		return func(*executorConfig) {}, nil
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	return func(c *executorConfig) { c.tls = &f }, nil
}

// executorTLSFiles are the files of WithTLSFiles or ExecutorTLSFromEnv, with
// the names errors give them (the parameter, or the environment variable).
type executorTLSFiles struct {
	cert, key, clientCA             string
	certName, keyName, clientCAName string
}

// check is what can be told without reading the files.
func (f *executorTLSFiles) check() error {
	switch {
	case f.cert == "" && f.key == "":
		if f.clientCA != "" {
			return fmt.Errorf("taskring: %s is set but %s and %s are not: mutual TLS needs the executor's own certificate and key",
				f.clientCAName, f.certName, f.keyName)
		}
		return fmt.Errorf("taskring: %s and %s are empty: TLS needs the executor's certificate and key", f.certName, f.keyName)
	case f.key == "":
		return fmt.Errorf("taskring: %s is set but %s is not: give the certificate's key too", f.certName, f.keyName)
	case f.cert == "":
		return fmt.Errorf("taskring: %s is set but %s is not: give the key's certificate too", f.keyName, f.certName)
	}
	return nil
}

// credentials reads the files into the server's TLS credentials.
func (f *executorTLSFiles) credentials() (credentials.TransportCredentials, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	certPEM, err := readPEMFile(f.cert, f.certName, "CERTIFICATE")
	if err != nil {
		return nil, err
	}
	keyPEM, err := readPEMFile(f.key, f.keyName, "PRIVATE KEY")
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("taskring: %s %q and %s %q are not a certificate and its key: %w",
			f.certName, f.cert, f.keyName, f.key, err)
	}
	conf := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	if f.clientCA != "" {
		caPEM, err := readPEMFile(f.clientCA, f.clientCAName, "CERTIFICATE")
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, fmt.Errorf("taskring: %s %q: no certificate in it can be parsed", f.clientCAName, f.clientCA)
		}
		conf.ClientCAs = pool
		conf.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return credentials.NewTLS(conf), nil
}

// mode is how the executor's log line describes the transport.
func (f *executorTLSFiles) mode() string {
	if f.clientCA != "" {
		return "mutual TLS"
	}
	return "TLS"
}

// readPEMFile reads path and checks that it holds a PEM block whose type ends
// with want ("CERTIFICATE"; "PRIVATE KEY" takes PKCS#8, "EC PRIVATE KEY" and
// "RSA PRIVATE KEY"), so that the error names the file that is wrong.
func readPEMFile(path, name, want string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("taskring: %s %q cannot be read: %w", name, path, err)
	}
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, fmt.Errorf("taskring: %s %q holds no PEM %s", name, path, want)
		}
		if strings.HasSuffix(block.Type, want) {
			return data, nil
		}
	}
}
