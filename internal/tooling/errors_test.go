package tooling

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
)

var errBelow = errors.New("below")

func TestErrorfKeepsCause(t *testing.T) {
	cases := []struct {
		name    string
		err     *Error
		message string
		is      []error // errors.Is finds each
		isNot   []error
	}{
		{"no verb", Errorf(CodeBusy, "over %d", 3), "over 3", nil, []error{errBelow}},
		{"%v drops the cause", Errorf(CodeUnavailable, "op: %v", errBelow), "op: below", nil, []error{errBelow}},
		{"%w keeps it", Errorf(CodeUnavailable, "op: %w", errBelow), "op: below", []error{errBelow}, []error{io.EOF}},
		{"%w through a chain", Errorf(CodeTimeout, "op: %w", fmt.Errorf("call: %w", context.DeadlineExceeded)),
			"op: call: context deadline exceeded", []error{context.DeadlineExceeded}, nil},
		{"two %w", Errorf(CodeProtocol, "%w: %w", errBelow, io.EOF), "below: EOF", []error{errBelow, io.EOF}, nil},
		{"the login-required sentinel", Errorf(CodeUnavailable, "call: %w", fmt.Errorf("session: %w", ErrLoginRequired)),
			"call: session: authorization required", []error{ErrLoginRequired}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err.Message != tc.message {
				t.Errorf("Message %q, want %q", tc.err.Message, tc.message)
			}
			for _, target := range tc.is {
				if !errors.Is(tc.err, target) {
					t.Errorf("errors.Is(%v, %v) = false", tc.err, target)
				}
			}
			for _, target := range tc.isNot {
				if errors.Is(tc.err, target) {
					t.Errorf("errors.Is(%v, %v) = true", tc.err, target)
				}
			}
			// Wrapped once more, it is still found with its code.
			var te *Error
			if !errors.As(fmt.Errorf("host: %w", tc.err), &te) || te != tc.err {
				t.Errorf("errors.As does not find the *Error")
			}
		})
	}
}

func TestAsErrorKeepsCause(t *testing.T) {
	cases := []struct {
		err  error
		code ErrorCode
	}{
		{fmt.Errorf("wait: %w", context.DeadlineExceeded), CodeTimeout},
		{fmt.Errorf("wait: %w", context.Canceled), CodeCancelled},
		{errBelow, CodeInternal},
	}
	for _, tc := range cases {
		te := AsError(tc.err)
		if te.Code != tc.code || te.Message != tc.err.Error() || !errors.Is(te, tc.err) {
			t.Errorf("AsError(%v) = %v (cause kept: %v), want code %v", tc.err, te, errors.Is(te, tc.err), tc.code)
		}
	}
	if te := Errorf(CodeDenied, "no"); AsError(fmt.Errorf("x: %w", te)) != te {
		t.Error("AsError does not return the *Error in the chain as it is")
	}
}
