package main

import (
	taskring "github.com/taskring/taskring/sdk/go"
)

// securityFromEnv is what the Python `taskring submit/get` commands read, from
// the environment only (arguments would show the secret in `ps`):
// TASKRING_TOKEN, and for TLS TASKRING_CA_FILE (plus TASKRING_CLIENT_CERT_FILE
// and TASKRING_CLIENT_KEY_FILE for mutual TLS). Unset: plaintext, no token.
func securityFromEnv(getenv func(string) string) []taskring.ClientOption {
	var opts []taskring.ClientOption
	if token := getenv("TASKRING_TOKEN"); token != "" {
		opts = append(opts, taskring.WithToken(token))
	}
	if ca := getenv("TASKRING_CA_FILE"); ca != "" {
		opts = append(opts, taskring.WithTLS(ca, getenv("TASKRING_CLIENT_CERT_FILE"), getenv("TASKRING_CLIENT_KEY_FILE")))
	}
	return opts
}
