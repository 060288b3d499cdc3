package taskring

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestFromRPCMapsEveryCodeLikePython(t *testing.T) {
	cases := []struct {
		code  codes.Code
		check func(error) bool
	}{
		{codes.InvalidArgument, func(e error) bool { return errors.As(e, new(*InvalidArgumentError)) }},
		{codes.NotFound, func(e error) bool { return errors.As(e, new(*NotFoundError)) }},
		{codes.AlreadyExists, func(e error) bool { return errors.As(e, new(*AlreadyExistsError)) }},
		{codes.FailedPrecondition, func(e error) bool { return errors.As(e, new(*FailedPreconditionError)) }},
		{codes.Unavailable, func(e error) bool { return errors.As(e, new(*UnavailableError)) }},
		{codes.ResourceExhausted, func(e error) bool { return errors.As(e, new(*ResourceExhaustedError)) }},
		{codes.DeadlineExceeded, func(e error) bool { return errors.As(e, new(*DeadlineExceededError)) }},
		{codes.PermissionDenied, func(e error) bool { return errors.As(e, new(*PermissionDeniedError)) }},
		{codes.Unauthenticated, func(e error) bool { return errors.As(e, new(*PermissionDeniedError)) }},
		{codes.Internal, func(e error) bool {
			var r *RPCError
			return errors.As(e, &r) && !errors.As(e, new(*UnavailableError))
		}},
	}
	for _, c := range cases {
		err := fromRPC(status.Error(c.code, "x: y"))
		if !c.check(err) {
			t.Errorf("%v: wrong type %T", c.code, err)
		}
		var base *RPCError
		if !errors.As(err, &base) || base.Code != c.code || base.Details != "x: y" {
			t.Errorf("%v: not an *RPCError with code and details: %#v", c.code, err)
		}
		if status.Code(err) != c.code {
			t.Errorf("%v: status.Code sees %v", c.code, status.Code(err))
		}
	}
}

func TestInvalidArgumentField(t *testing.T) {
	cases := []struct{ details, field, problem string }{
		{"tasks[2].payload_json: is not valid JSON: x", "tasks[2].payload_json", "is not valid JSON: x"},
		{"task.namespace: is required", "task.namespace", "is required"},
		{"something went wrong: badly", "", "something went wrong: badly"}, // a space: not a field
		{"no colon here", "", "no colon here"},
		{": empty field", "", ": empty field"},
	}
	for _, c := range cases {
		var ia *InvalidArgumentError
		if !errors.As(fromRPC(status.Error(codes.InvalidArgument, c.details)), &ia) {
			t.Fatal("not an InvalidArgumentError")
		}
		if ia.Field != c.field || ia.Problem != c.problem {
			t.Errorf("%q: got (%q, %q), want (%q, %q)", c.details, ia.Field, ia.Problem, c.field, c.problem)
		}
	}
}

func TestDeadlineExceededIsContextDeadline(t *testing.T) {
	err := fromRPC(status.Error(codes.DeadlineExceeded, "late"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Error("errors.Is(err, context.DeadlineExceeded) is false")
	}
}

func TestNonRetryableWraps(t *testing.T) {
	base := errors.New("no such order")
	err := NonRetryable(base)
	if !errors.Is(err, base) || err.Error() != "no such order" {
		t.Errorf("NonRetryable does not wrap: %v", err)
	}
	if NonRetryable(nil) != nil {
		t.Error("NonRetryable(nil) is not nil")
	}
}
