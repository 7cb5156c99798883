package tooling

import (
	"context"
	"errors"
	"fmt"
)

// ErrorCode is the contract's error-code enum, in WIT order.
type ErrorCode uint8

// The contract's error codes (WIT types.error-code), in declaration order so
// that the numeric value is the WIT enum discriminant.
const (
	CodeNotFound ErrorCode = iota
	CodeDenied
	CodeInvalidArgument
	CodeUnsupported
	CodeUnavailable
	CodeBusy
	CodeTimeout
	CodeCancelled
	CodeProtocol
	CodeInternal
)

var codeNames = [...]string{
	"not-found", "denied", "invalid-argument", "unsupported", "unavailable",
	"busy", "timeout", "cancelled", "protocol", "internal",
}

// String returns the WIT case name, e.g. "invalid-argument".
func (c ErrorCode) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("error-code(%d)", uint8(c))
}

// ParseErrorCode returns the code whose WIT case name is s.
func ParseErrorCode(s string) (ErrorCode, bool) {
	for i, n := range codeNames {
		if n == s {
			return ErrorCode(i), true
		}
	}
	return 0, false
}

// Error is the contract's host-error: a code and a message. On the host
// side it may also keep the error that caused it (see Errorf), for
// errors.Is and errors.As; the guest sees the code and the message only.
type Error struct {
	Code    ErrorCode
	Message string

	cause error // nil, or the errors Errorf's %w verbs wrapped
}

func (e *Error) Error() string { return e.Code.String() + ": " + e.Message }

// Unwrap returns the cause Errorf kept, if any.
func (e *Error) Unwrap() error { return e.cause }

// Errorf builds an *Error with a formatted message. As with fmt.Errorf, an
// error given to a %w verb is kept as the cause: errors.Is and errors.As
// find it.
func Errorf(code ErrorCode, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	e := &Error{Code: code, Message: err.Error()}
	switch err.(type) {
	case interface{ Unwrap() error }, interface{ Unwrap() []error }:
		e.cause = err
	}
	return e
}

// AsError converts any error to the contract's *Error: an *Error in the chain
// is returned as it is, context deadline and cancellation become timeout and
// cancelled, anything else is internal.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var te *Error
	if errors.As(err, &te) {
		return te
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Code: CodeTimeout, Message: err.Error(), cause: err}
	case errors.Is(err, context.Canceled):
		return &Error{Code: CodeCancelled, Message: err.Error(), cause: err}
	}
	return &Error{Code: CodeInternal, Message: err.Error(), cause: err}
}

// CodeOf is AsError(err).Code; it must not be called with a nil error.
func CodeOf(err error) ErrorCode { return AsError(err).Code }

// ErrLoginRequired is in the chain of a session's error (mcpclient.Status.LastError
// and operations report it as unavailable) when the server wants an OAuth
// token nobody present can obtain: none is stored, or the server refused
// it. `toolhostd auth login NAME` stores one; the tooling then reconnects
// by itself.
var ErrLoginRequired = errors.New("authorization required")
