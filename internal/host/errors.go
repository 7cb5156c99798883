package host

import "errors"

// Sentinel errors callers test for.
var (
	// ErrBadComponent marks a component that does not fit the agent world.
	ErrBadComponent = errors.New("not a toolhost:agent component")
	// ErrNotComponent marks a file that is not WebAssembly at all: no
	// binary header and not text.
	ErrNotComponent = errors.New("not a WebAssembly component")
	// ErrInterrupted marks an agent stopped by the host (shutdown grace
	// exceeded, run timeout) while it was running guest code.
	ErrInterrupted = errors.New("agent interrupted")
	// ErrUnprovidedImport is the trap of a call to an import the host does
	// not provide.
	ErrUnprovidedImport = errors.New("the agent called an import toolhostd does not provide")
	// ErrClosed is returned by Open after Close.
	ErrClosed = errors.New("the host is closed")
)
