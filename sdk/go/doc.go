// Package taskring is the Go SDK of taskring, a distributed task queue.
//
// A business service uses a [Client] to submit, cancel and look up tasks on the
// dispatcher cluster, and an [Executor] to run the tasks of its namespace: the
// executor is a small gRPC server that registers itself in ZooKeeper, where the
// dispatchers find it and send it batches of due tasks.
//
// The wire contract is proto/taskring/v1/taskring.proto; its generated Go code
// is the package github.com/taskring/taskring/sdk/go/pb/taskring/v1. The Python
// SDK (sdk/python/taskring) is the reference implementation: this package
// mirrors its encoding, errors and executor behaviour, and both are checked
// against the shared test vectors in sdk/vectors.
package taskring
