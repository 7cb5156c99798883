package host

import (
	"errors"

	wt "github.com/toolhostd/toolhostd/internal/wasmtime"
)

// Sentinel errors callers test for.
var (
	// ErrBadComponent marks a component that does not fit the agent world.
	ErrBadComponent = errors.New("not a toolhost:agent component")
	// ErrInterrupted marks an agent stopped by the host (shutdown grace
	// exceeded, run timeout) while it was running guest code.
	ErrInterrupted = errors.New("agent interrupted")
	// ErrUnprovidedImport is the trap of a call to an import the host does
	// not provide.
	ErrUnprovidedImport = errors.New("the agent called an import toolhostd does not provide")

	// The durable instances' errors (journal.go). ErrDiverged: a replayed
	// guest made a call other than the one recorded (*DivergenceError);
	// ErrComponentChanged: the oplog was recorded by another component;
	// ErrOplogCorrupt: a recorded result does not decode; ErrOplogWrite:
	// an append failed, so the call was not made; ErrOplogFull: the
	// instance reached its max_oplog; ErrNotDurable: a call a durable
	// instance cannot make.
	ErrDiverged         = errors.New("replay diverged")
	ErrSuspended        = errors.New("agent suspended")
	ErrComponentChanged = errors.New("the component changed since its oplog was recorded")
	ErrOplogCorrupt     = errors.New("oplog entry corrupt")
	ErrOplogWrite       = errors.New("oplog append failed")
	ErrOplogFull        = errors.New("the instance's oplog is full (max_oplog)")
	ErrNotDurable       = errors.New("a durable agent cannot make this call")
)

// IsTrap reports whether err is (or wraps) a trap of the guest's (a
// *wasmtime.Trap), so that callers need not import the binding.
func IsTrap(err error) bool {
	var trap *wt.Trap
	return errors.As(err, &trap)
}
