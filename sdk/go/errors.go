package taskring

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The client's error tree mirrors sdk/python/taskring/errors.py: every failed
// call returns an error that errors.As can turn into *RPCError, and, for the
// codes a caller is expected to handle, into one more specific type
// (*InvalidArgumentError, *NotFoundError, ...). The specific types embed
// *RPCError and unwrap to it, so both levels match.

// RPCError is a call to a dispatcher that failed with a gRPC status. Codes
// without a specific type below arrive as a plain *RPCError.
type RPCError struct {
	Code    codes.Code
	Details string
	cause   error // the gRPC status error, for errors.Unwrap and status.FromError
}

func (e *RPCError) Error() string {
	if e.Details == "" {
		return "taskring: " + e.Code.String()
	}
	return "taskring: " + e.Code.String() + ": " + e.Details
}

// Unwrap returns the original gRPC status error.
func (e *RPCError) Unwrap() error { return e.cause }

// GRPCStatus lets status.FromError and status.Code see the original status.
func (e *RPCError) GRPCStatus() *status.Status { return status.New(e.Code, e.Details) }

// InvalidArgumentError: the request was rejected as bad input and nothing was
// written. Field names the offending field ("task.namespace",
// "tasks[2].payload_json"), or is "" when the server named none (the server
// words every such message "<field>: <problem>"). Resubmitting fails the same way.
type InvalidArgumentError struct {
	*RPCError
	Field   string
	Problem string
}

func (e *InvalidArgumentError) Unwrap() error { return e.RPCError }

// NotFoundError: no task has that id (or it was purged).
type NotFoundError struct{ *RPCError }

func (e *NotFoundError) Unwrap() error { return e.RPCError }

// AlreadyExistsError: the request conflicts with something already stored (e.g. a unique key).
type AlreadyExistsError struct{ *RPCError }

func (e *AlreadyExistsError) Unwrap() error { return e.RPCError }

// FailedPreconditionError: the task's state forbids the request (cancel after it finished).
type FailedPreconditionError struct{ *RPCError }

func (e *FailedPreconditionError) Unwrap() error { return e.RPCError }

// UnavailableError: the cluster could not take the request now. Safe to retry;
// retry a submit with the same TaskID so the server reports it as a duplicate.
type UnavailableError struct{ *RPCError }

func (e *UnavailableError) Unwrap() error { return e.RPCError }

// ResourceExhaustedError: load shedding or a message too large. Back off, then retry.
type ResourceExhaustedError struct{ *RPCError }

func (e *ResourceExhaustedError) Unwrap() error { return e.RPCError }

// DeadlineExceededError: no answer in time; the request may have been applied.
// It also matches errors.Is(err, context.DeadlineExceeded), since in Go the
// deadline is usually the caller's own context.
type DeadlineExceededError struct{ *RPCError }

func (e *DeadlineExceededError) Unwrap() error { return e.RPCError }

// Is makes errors.Is(err, context.DeadlineExceeded) true.
func (e *DeadlineExceededError) Is(target error) bool { return target == context.DeadlineExceeded }

// PermissionDeniedError: PERMISSION_DENIED or UNAUTHENTICATED.
type PermissionDeniedError struct{ *RPCError }

func (e *PermissionDeniedError) Unwrap() error { return e.RPCError }

// ProtocolError: the server sent something this SDK version does not
// understand (a new task state, a malformed time).
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return "taskring: protocol error: " + e.Msg }

// fromRPC turns an error from a generated stub into the SDK's error tree.
// Errors that carry no gRPC status (none are expected) pass through unchanged.
func fromRPC(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	base := &RPCError{Code: st.Code(), Details: st.Message(), cause: err}
	switch st.Code() {
	case codes.InvalidArgument:
		field, problem := splitFieldProblem(st.Message())
		return &InvalidArgumentError{RPCError: base, Field: field, Problem: problem}
	case codes.NotFound:
		return &NotFoundError{base}
	case codes.AlreadyExists:
		return &AlreadyExistsError{base}
	case codes.FailedPrecondition:
		return &FailedPreconditionError{base}
	case codes.Unavailable:
		return &UnavailableError{base}
	case codes.ResourceExhausted:
		return &ResourceExhaustedError{base}
	case codes.DeadlineExceeded:
		return &DeadlineExceededError{base}
	case codes.PermissionDenied, codes.Unauthenticated:
		return &PermissionDeniedError{base}
	}
	return base
}

// splitFieldProblem parses "<field>: <problem>" exactly as Python's
// InvalidArgument does: a field is a non-empty prefix with no space in it.
func splitFieldProblem(details string) (field, problem string) {
	f, p, ok := strings.Cut(details, ": ")
	if ok && f != "" && !strings.Contains(f, " ") {
		return f, p
	}
	return "", details
}

// isUnavailable reports whether err (from a stub) has the UNAVAILABLE code:
// the only failure after which an idempotent call is tried on the next node.
func isUnavailable(err error) bool {
	var u *UnavailableError
	return errors.As(err, &u)
}
