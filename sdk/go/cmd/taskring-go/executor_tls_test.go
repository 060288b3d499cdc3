package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
)

func noEnv(string) string { return "" }

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

var baseExecutorArgs = []string{"--zk", "127.0.0.1:22181/x", "--namespace", "shop", "--types", "a"}

func TestParseExecutorTLSFlags(t *testing.T) {
	a, err := parseExecutor(baseExecutorArgs, noEnv)
	if err != nil || a.tlsCert != "" || a.tlsKey != "" || a.tlsClientCA != "" {
		t.Fatalf("without flags or env: %+v %v", a, err)
	}
	a, err = parseExecutor(append(baseExecutorArgs, "--tls-cert", "s.pem", "--tls-key", "s.key", "--tls-client-ca", "ca.pem"), noEnv)
	if err != nil || a.tlsCert != "s.pem" || a.tlsKey != "s.key" || a.tlsClientCA != "ca.pem" {
		t.Fatalf("flags: %+v %v", a, err)
	}
	env := envOf(map[string]string{"TASKRING_EXECUTOR_TLS_CERT_FILE": "env.pem", "TASKRING_EXECUTOR_TLS_KEY_FILE": "env.key",
		"TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE": "env-ca.pem"})
	a, err = parseExecutor(baseExecutorArgs, env)
	if err != nil || a.tlsCert != "env.pem" || a.tlsKey != "env.key" || a.tlsClientCA != "env-ca.pem" {
		t.Fatalf("env defaults: %+v %v", a, err)
	}
	a, err = parseExecutor(append(baseExecutorArgs, "--tls-cert", "flag.pem", "--tls-client-ca", ""), env)
	if err != nil || a.tlsCert != "flag.pem" || a.tlsKey != "env.key" || a.tlsClientCA != "" {
		t.Fatalf("a flag overrides its variable: %+v %v", a, err)
	}
	for _, c := range []struct {
		args []string
		env  map[string]string
		want []string
	}{
		{args: []string{"--tls-cert", "s.pem"}, want: []string{"--tls-key", "TASKRING_EXECUTOR_TLS_KEY_FILE"}},
		{args: []string{"--tls-key", "s.key"}, want: []string{"--tls-cert", "TASKRING_EXECUTOR_TLS_CERT_FILE"}},
		{args: []string{"--tls-client-ca", "ca.pem"}, want: []string{"--tls-client-ca", "--tls-cert", "--tls-key"}},
		{env: map[string]string{"TASKRING_EXECUTOR_TLS_CERT_FILE": "env.pem"}, want: []string{"--tls-key", "TASKRING_EXECUTOR_TLS_KEY_FILE"}},
		{env: map[string]string{"TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE": "ca.pem"}, want: []string{"TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE"}},
	} {
		_, err := parseExecutor(append(append([]string(nil), baseExecutorArgs...), c.args...), envOf(c.env))
		if err == nil {
			t.Errorf("%v %v: accepted", c.args, c.env)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v %v: the error does not name %s: %v", c.args, c.env, w, err)
			}
		}
	}
}

// A file the executor cannot use stops the command before it registers: the
// error names the file (here from TASKRING_EXECUTOR_TLS_CERT_FILE, the real environment).
func TestRunExecutorRefusesAnUnreadableTLSFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.pem")
	t.Setenv("TASKRING_EXECUTOR_TLS_CERT_FILE", missing)
	t.Setenv("TASKRING_EXECUTOR_TLS_KEY_FILE", missing)
	t.Setenv("TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE", "")
	// An unreachable ZooKeeper: had the executor started, the error would be about it.
	err := runExecutor([]string{"--zk", "127.0.0.1:1", "--namespace", "shop", "--types", "a"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "certFile") {
		t.Fatalf("got %v", err)
	}
}
