package mcpclient

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// JSON-RPC error codes go-sdk uses besides the standard ones.
const (
	codeResourceNotFoundLegacy = -32002 // pre-SEP-2164 resource not found
	codeClientClosing          = -32003 // go-sdk jsonrpc2: client is closing
	codeServerClosing          = -32004 // go-sdk jsonrpc2: server is closing
)

// sessionLostError is the cause a session's context is cancelled with when
// the session dies or is torn down; in-flight operations then fail with
// unavailable.
type sessionLostError struct{ err error }

func (e *sessionLostError) Error() string { return "session lost: " + e.err.Error() }
func (e *sessionLostError) Unwrap() error { return e.err }

// errCallTimeout is the cause of a request's own deadline (the tooling's
// call timeout) as opposed to the caller's.
var errCallTimeout = errors.New("call timeout")

// mapError turns the error of one MCP request into the contract's *Error.
// caller is the caller's context, opCtx the one the request ran with
// (caller + call timeout + session lifetime); op names the operation for
// the message, e.g. `tools/call "echo"`.
func mapError(caller, opCtx context.Context, op string, err error) *tooling.Error {
	if err == nil {
		return nil
	}
	var te *tooling.Error
	if errors.As(err, &te) {
		return te
	}
	// The caller's own context wins: it decided to stop.
	if cerr := caller.Err(); cerr != nil {
		if errors.Is(cerr, context.DeadlineExceeded) {
			return tooling.Errorf(tooling.CodeTimeout, "%s: %w", op, cerr)
		}
		return tooling.Errorf(tooling.CodeCancelled, "%s: %w", op, cerr)
	}
	if opCtx.Err() != nil {
		cause := context.Cause(opCtx)
		var sl *sessionLostError
		switch {
		case errors.As(cause, &sl):
			return tooling.Errorf(tooling.CodeUnavailable, "%s: %w", op, sl)
		case errors.Is(cause, errCallTimeout):
			return tooling.Errorf(tooling.CodeTimeout, "%s: no answer within the call timeout", op)
		}
	}
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return tooling.Errorf(codeForWire(op, we), "%s: %s", op, we.Message)
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return tooling.Errorf(tooling.CodeTimeout, "%s: %w", op, err)
	case errors.Is(err, context.Canceled):
		return tooling.Errorf(tooling.CodeCancelled, "%s: %w", op, err)
	case errors.Is(err, mcp.ErrConnectionClosed), errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, mcp.ErrSessionMissing):
		return tooling.Errorf(tooling.CodeUnavailable, "%s: %w", op, err)
	}
	// What remains are transport failures: a broken pipe, an HTTP error, a
	// stream that stopped being JSON-RPC (go-sdk reports garbage on stdout
	// and an undecodable result alike, as a JSON error; both end up here).
	return tooling.Errorf(tooling.CodeUnavailable, "%s: %w", op, err)
}

// codeForWire maps a JSON-RPC error object from the server.
func codeForWire(op string, we *jsonrpc.Error) tooling.ErrorCode {
	msg := strings.ToLower(we.Message)
	switch we.Code {
	case jsonrpc.CodeMethodNotFound:
		if strings.HasPrefix(op, "tools/call") {
			return tooling.CodeNotFound
		}
		return tooling.CodeUnsupported
	case jsonrpc.CodeInvalidParams:
		if strings.Contains(msg, "unknown tool") || strings.Contains(msg, "not found") {
			return tooling.CodeNotFound
		}
		return tooling.CodeInvalidArgument
	case codeResourceNotFoundLegacy:
		return tooling.CodeNotFound
	case codeClientClosing, codeServerClosing:
		return tooling.CodeUnavailable
	}
	return tooling.CodeProtocol
}
