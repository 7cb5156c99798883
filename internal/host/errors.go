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
)

// IsTrap reports whether err is (or wraps) a trap of the guest's (a
// *wasmtime.Trap), so that callers need not import the binding.
func IsTrap(err error) bool {
	var trap *wt.Trap
	return errors.As(err, &trap)
}
