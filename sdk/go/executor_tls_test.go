package taskring

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pb "github.com/taskring/taskring/sdk/go/pb/taskring/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// localCerts runs deploy/local/certs.sh into a fresh directory and returns
// it: ca.pem, server.pem/.key (127.0.0.1, localhost), client.pem/.key (signed
// by ca), other-ca.pem, other-client.pem/.key (signed by other-ca).
func localCerts(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("bash", "../../deploy/local/certs.sh", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("deploy/local/certs.sh (needs openssl): %v\n%s", err, out)
	}
	return dir
}

// tlsExecutor starts an executor (no ZooKeeper) whose one handler, "ok",
// counts its runs.
func tlsExecutor(t *testing.T, opts ...ExecutorOption) (*Executor, *atomic.Int32) {
	t.Helper()
	var runs atomic.Int32
	ex, err := NewExecutor("shop", append([]ExecutorOption{WithLogger(quiet)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := ex.Handle("ok", func(context.Context, *Task) error { runs.Add(1); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := ex.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ex.Stop(context.Background()) })
	return ex, &runs
}

// dialerCreds are the dispatcher's side: trust caFile, show certFile/keyFile
// when given. "" caFile means plaintext.
func dialerCreds(t *testing.T, caFile, certFile, keyFile string) credentials.TransportCredentials {
	t.Helper()
	if caFile == "" {
		return insecure.NewCredentials()
	}
	pemBytes, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		t.Fatalf("no certificate in %s", caFile)
	}
	conf := &tls.Config{RootCAs: pool}
	if certFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		conf.Certificates = []tls.Certificate{pair}
	}
	return credentials.NewTLS(conf)
}

// executeOnce delivers one "ok" task over a fresh connection and returns
// its outcome or the call's error.
func executeOnce(t *testing.T, addr string, creds credentials.TransportCredentials) (*pb.Outcome, error) {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := pb.NewExecutorServiceClient(cc).Execute(ctx,
		&pb.ExecuteRequest{Deliveries: []*pb.Delivery{delivery("t1", "ok", 1, 5000)}, DispatcherNode: "d1"})
	if err != nil {
		return nil, err
	}
	if len(resp.GetOutcomes()) != 1 {
		t.Fatalf("%d outcomes for one delivery", len(resp.GetOutcomes()))
	}
	return resp.GetOutcomes()[0], nil
}

func wantSucceeded(t *testing.T, what string, o *pb.Outcome, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if o.GetKind() != pb.OutcomeKind_OUTCOME_KIND_SUCCEEDED || o.GetTaskId() != "t1" {
		t.Fatalf("%s: outcome %v", what, o)
	}
}

// wantRefused: the handshake failed, so the call never reached the executor.
func wantRefused(t *testing.T, what string, o *pb.Outcome, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: the call succeeded (%v)", what, o)
	}
	if status.Code(err) != codes.Unavailable {
		t.Errorf("%s: %v, want UNAVAILABLE (a failed handshake)", what, err)
	}
}

func TestExecutorServesTLS(t *testing.T) {
	dir := localCerts(t)
	ex, runs := tlsExecutor(t, WithTLSFiles(filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key"), ""))
	o, err := executeOnce(t, ex.Address(), dialerCreds(t, filepath.Join(dir, "ca.pem"), "", ""))
	wantSucceeded(t, "a dialer trusting ca.pem", o, err)
	if runs.Load() != 1 {
		t.Fatalf("the handler ran %d times, want 1", runs.Load())
	}
	o, err = executeOnce(t, ex.Address(), dialerCreds(t, "", "", ""))
	wantRefused(t, "a plaintext dialer", o, err)
	o, err = executeOnce(t, ex.Address(), dialerCreds(t, filepath.Join(dir, "other-ca.pem"), "", ""))
	wantRefused(t, "a dialer trusting other-ca.pem", o, err)
	if err != nil && !strings.Contains(err.Error(), "certificate") {
		t.Errorf("the refusal does not say the certificate is not trusted: %v", err)
	}
	// Without a client CA no client certificate is asked for, so showing one is harmless.
	o, err = executeOnce(t, ex.Address(), dialerCreds(t, filepath.Join(dir, "ca.pem"),
		filepath.Join(dir, "other-client.pem"), filepath.Join(dir, "other-client.key")))
	wantSucceeded(t, "a dialer showing an unasked-for certificate", o, err)
	if runs.Load() != 2 {
		t.Errorf("the handler ran %d times, want 2 (the refused calls must not run it)", runs.Load())
	}
}

func TestExecutorTLSRefusesVersionsBelow12(t *testing.T) {
	dir := localCerts(t)
	ex, runs := tlsExecutor(t, WithTLSFiles(filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key"), ""))
	caPEM, _ := os.ReadFile(filepath.Join(dir, "ca.pem"))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	old := credentials.NewTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11})
	o, err := executeOnce(t, ex.Address(), old)
	wantRefused(t, "a TLS 1.1 dialer", o, err)
	if runs.Load() != 0 {
		t.Errorf("the handler ran %d times", runs.Load())
	}
}

func TestExecutorServesMutualTLS(t *testing.T) {
	dir := localCerts(t)
	ca := filepath.Join(dir, "ca.pem")
	ex, runs := tlsExecutor(t, WithTLSFiles(filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key"), ca))
	o, err := executeOnce(t, ex.Address(), dialerCreds(t, ca, filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key")))
	wantSucceeded(t, "a dialer showing client.pem", o, err)
	o, err = executeOnce(t, ex.Address(), dialerCreds(t, ca, "", ""))
	wantRefused(t, "a dialer showing no certificate", o, err)
	o, err = executeOnce(t, ex.Address(), dialerCreds(t, ca, filepath.Join(dir, "other-client.pem"), filepath.Join(dir, "other-client.key")))
	wantRefused(t, "a dialer showing other-client.pem", o, err)
	o, err = executeOnce(t, ex.Address(), dialerCreds(t, "", "", ""))
	wantRefused(t, "a plaintext dialer", o, err)
	if runs.Load() != 1 {
		t.Errorf("the handler ran %d times, want 1 (only the call with client.pem)", runs.Load())
	}
}

// WithServerOptions(grpc.Creds(...)) still serves TLS, as before WithTLSFiles.
func TestExecutorWithServerOptionsCredsStillWorks(t *testing.T) {
	dir := localCerts(t)
	creds, err := credentials.NewServerTLSFromFile(filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key"))
	if err != nil {
		t.Fatal(err)
	}
	ex, _ := tlsExecutor(t, WithServerOptions(grpc.Creds(creds)))
	o, err := executeOnce(t, ex.Address(), dialerCreds(t, filepath.Join(dir, "ca.pem"), "", ""))
	wantSucceeded(t, "TLS through WithServerOptions", o, err)
	o, err = executeOnce(t, ex.Address(), dialerCreds(t, "", "", ""))
	wantRefused(t, "a plaintext dialer", o, err)
}

// Both given: WithTLSFiles wins (documented), in either order.
func TestExecutorWithTLSFilesWinsOverGRPCCreds(t *testing.T) {
	dir := localCerts(t)
	tlsFiles := WithTLSFiles(filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key"), "")
	plain := WithServerOptions(grpc.Creds(insecure.NewCredentials()))
	for name, opts := range map[string][]ExecutorOption{"files first": {tlsFiles, plain}, "creds first": {plain, tlsFiles}} {
		ex, _ := tlsExecutor(t, opts...)
		o, err := executeOnce(t, ex.Address(), dialerCreds(t, filepath.Join(dir, "ca.pem"), "", ""))
		wantSucceeded(t, name+": a TLS dialer", o, err)
		o, err = executeOnce(t, ex.Address(), dialerCreds(t, "", "", ""))
		wantRefused(t, name+": a plaintext dialer", o, err)
	}
}

func TestWithTLSFilesConfigurationErrors(t *testing.T) {
	dir := localCerts(t)
	cert, key, ca := filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key"), filepath.Join(dir, "ca.pem")
	missing := filepath.Join(dir, "missing.pem")
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("this is not PEM\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name           string
		cert, key, ca  string
		want           []string // in the error
		wantNotExist   bool
		wantNotInError string
	}{
		{name: "nothing", want: []string{"certFile", "keyFile"}},
		{name: "cert without key", cert: cert, want: []string{"keyFile", "certFile"}},
		{name: "key without cert", key: key, want: []string{"certFile", "keyFile"}},
		{name: "client CA without cert and key", ca: ca, want: []string{"clientCAFile", "certFile", "keyFile"}},
		{name: "client CA with cert only", cert: cert, ca: ca, want: []string{"keyFile"}},
		{name: "unreadable cert", cert: missing, key: key, want: []string{"WithTLSFiles certFile", missing}, wantNotExist: true},
		{name: "unreadable key", cert: cert, key: missing, want: []string{"WithTLSFiles keyFile", missing}, wantNotExist: true},
		{name: "unreadable client CA", cert: cert, key: key, ca: missing, want: []string{"WithTLSFiles clientCAFile", missing}, wantNotExist: true},
		{name: "cert not PEM", cert: notPEM, key: key, want: []string{"WithTLSFiles certFile", notPEM, "no PEM"}},
		{name: "key not PEM", cert: cert, key: notPEM, want: []string{"WithTLSFiles keyFile", notPEM, "no PEM"}},
		{name: "client CA not PEM", cert: cert, key: key, ca: notPEM, want: []string{"WithTLSFiles clientCAFile", notPEM, "no PEM"}},
		{name: "a key as the cert", cert: key, key: key, want: []string{"WithTLSFiles certFile", key, "CERTIFICATE"}},
		{name: "a key that is not the cert's", cert: cert, key: filepath.Join(dir, "client.key"),
			want: []string{"certFile", "keyFile", cert, filepath.Join(dir, "client.key")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// With ZooKeeper configured too: the error comes from NewExecutor, before anything could register.
			ex, err := NewExecutor("shop", WithLogger(quiet), WithZooKeeper("127.0.0.1:1"), WithTLSFiles(c.cert, c.key, c.ca))
			if err == nil {
				_ = ex.Stop(context.Background())
				t.Fatal("NewExecutor accepted it")
			}
			if ex != nil {
				t.Error("NewExecutor returned an executor with its error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not name %q: %v", w, err)
				}
			}
			if c.wantNotExist && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the error does not wrap fs.ErrNotExist: %v", err)
			}
		})
	}
}

func TestExecutorTLSFromEnv(t *testing.T) {
	dir := localCerts(t)
	cert, key, ca := filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key"), filepath.Join(dir, "ca.pem")
	setEnv := func(cert, key, ca string) {
		t.Setenv(EnvExecutorTLSCertFile, cert)
		t.Setenv(EnvExecutorTLSKeyFile, key)
		t.Setenv(EnvExecutorTLSClientCAFile, ca)
	}
	if EnvExecutorTLSCertFile != "TASKRING_EXECUTOR_TLS_CERT_FILE" || EnvExecutorTLSKeyFile != "TASKRING_EXECUTOR_TLS_KEY_FILE" ||
		EnvExecutorTLSClientCAFile != "TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE" {
		t.Fatal("the environment variables are not the contract's")
	}

	t.Run("none set: plaintext", func(t *testing.T) {
		setEnv("", "", "")
		opt, err := ExecutorTLSFromEnv()
		if err != nil || opt == nil {
			t.Fatalf("%v %v", opt, err)
		}
		ex, _ := tlsExecutor(t, opt)
		o, err := executeOnce(t, ex.Address(), insecure.NewCredentials())
		wantSucceeded(t, "a plaintext dialer", o, err)
	})

	t.Run("partial", func(t *testing.T) {
		for _, c := range []struct {
			cert, key, ca string
			want          []string
		}{
			{cert: cert, want: []string{"TASKRING_EXECUTOR_TLS_KEY_FILE"}},
			{key: key, want: []string{"TASKRING_EXECUTOR_TLS_CERT_FILE"}},
			{ca: ca, want: []string{"TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE", "TASKRING_EXECUTOR_TLS_CERT_FILE", "TASKRING_EXECUTOR_TLS_KEY_FILE"}},
			{cert: cert, ca: ca, want: []string{"TASKRING_EXECUTOR_TLS_KEY_FILE"}},
		} {
			setEnv(c.cert, c.key, c.ca)
			opt, err := ExecutorTLSFromEnv()
			if err == nil || opt != nil {
				t.Errorf("cert %q key %q ca %q: accepted (err %v)", c.cert, c.key, c.ca, err)
				continue
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not name %s: %v", w, err)
				}
			}
		}
	})

	t.Run("an unreadable file names the variable", func(t *testing.T) {
		missing := filepath.Join(dir, "missing.key")
		setEnv(cert, missing, "")
		opt, err := ExecutorTLSFromEnv()
		if err != nil {
			t.Fatal(err)
		}
		_, err = NewExecutor("shop", WithLogger(quiet), opt)
		if err == nil || !strings.Contains(err.Error(), "TASKRING_EXECUTOR_TLS_KEY_FILE") || !strings.Contains(err.Error(), missing) {
			t.Fatalf("got %v", err)
		}
	})

	t.Run("all set: mutual TLS", func(t *testing.T) {
		setEnv(cert, key, ca)
		opt, err := ExecutorTLSFromEnv()
		if err != nil {
			t.Fatal(err)
		}
		ex, runs := tlsExecutor(t, opt)
		o, err := executeOnce(t, ex.Address(), dialerCreds(t, ca, filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key")))
		wantSucceeded(t, "a dialer showing client.pem", o, err)
		o, err = executeOnce(t, ex.Address(), dialerCreds(t, ca, "", ""))
		wantRefused(t, "a dialer showing no certificate", o, err)
		if runs.Load() != 1 {
			t.Errorf("the handler ran %d times, want 1", runs.Load())
		}
	})
}

// With TLS the znode is the same as without: the dispatcher learns of TLS from its own configuration.
func TestIntegrationTLSRegistrationIsUnchanged(t *testing.T) {
	servers, conn, chroot := itZK(t)
	dir := localCerts(t)
	ex, runs := tlsExecutor(t, WithZooKeeper(servers+chroot), WithInstanceID("it-tls"),
		WithTLSFiles(filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key"), filepath.Join(dir, "ca.pem")))
	data, _, err := conn.Get(chroot + "/executors/shop/it-tls")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"address":"` + ex.Address() + `","namespace":"shop","task_types":["ok"],"max_in_flight":64,"pid":`
	if !strings.HasPrefix(string(data), want) || strings.Contains(strings.ToLower(string(data)), "tls") {
		t.Errorf("znode data:\n got  %s\n want %s<pid>}", data, want)
	}
	// The registered address is the one to dial with TLS.
	o, err := executeOnce(t, ex.Address(), dialerCreds(t, filepath.Join(dir, "ca.pem"),
		filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key")))
	wantSucceeded(t, "mutual TLS to the registered address", o, err)
	if runs.Load() != 1 {
		t.Errorf("the handler ran %d times", runs.Load())
	}
}
