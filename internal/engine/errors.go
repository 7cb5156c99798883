package engine

import "errors"

// Sentinel errors callers test for.
var (
	// ErrNotComponent marks a file that is not WebAssembly at all: no
	// binary header and not text.
	ErrNotComponent = errors.New("not a WebAssembly component")
	// ErrClosed is returned by Open after Close.
	ErrClosed = errors.New("the engine is closed")
	// ErrNoLink is Load's error on an engine made without Options.Link
	// (one that only compiles, as toolhostd compile's).
	ErrNoLink = errors.New("the engine links no components")
)
