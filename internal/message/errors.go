package message

import (
	"errors"

	"github.com/toolhostd/toolhostd/internal/tooling"
)

// Sentinels, for callers that map a refusal to their protocol (the control
// API's HTTP statuses). Every error Send returns is also a *tooling.Error
// with the contract's code, for guests.
var (
	// ErrUnknownAgent: no agent of that name (not-found, 404).
	ErrUnknownAgent = errors.New("unknown agent")
	// ErrDenied: the agent does not accept this sender, or the sender may
	// not send to it (denied, 403).
	ErrDenied = errors.New("sender not accepted")
	// ErrUnsupported: the agent's component cannot receive messages
	// (unsupported, 409).
	ErrUnsupported = errors.New("agent cannot receive messages")
	// ErrTooLarge: the content is over the agent's max_message_bytes
	// (invalid-argument, 413).
	ErrTooLarge = errors.New("message too large")
	// ErrBusy: the agent's inbox, its instances or the retention are full
	// (busy, 429): retry later.
	ErrBusy = errors.New("busy")
	// ErrUnavailable: the agent is not running and cannot be started now
	// (stopped, failed, fenced, shutting down) (unavailable, 503).
	ErrUnavailable = errors.New("agent unavailable")
	// ErrNotOpen: a reply for an id that is not an open message to this
	// instance (invalid-argument).
	ErrNotOpen = errors.New("not an open message")
	// ErrCancelled: a reply for a message its sender cancelled (cancelled).
	ErrCancelled = errors.New("message cancelled")
)

// refusal is a *tooling.Error that also matches one of the sentinels above.
type refusal struct {
	herr     *tooling.Error
	sentinel error
}

func (r *refusal) Error() string   { return r.herr.Error() }
func (r *refusal) Unwrap() []error { return []error{r.herr, r.sentinel} }

// Refuse builds an error with the contract's code that also matches
// sentinel (one of the above), for the Agents that deliver.
func Refuse(sentinel error, code tooling.ErrorCode, format string, args ...any) error {
	return refuse(sentinel, code, format, args...)
}

// refuse builds an error with the contract's code and a sentinel.
func refuse(sentinel error, code tooling.ErrorCode, format string, args ...any) error {
	return &refusal{herr: tooling.Errorf(code, format, args...), sentinel: sentinel}
}
