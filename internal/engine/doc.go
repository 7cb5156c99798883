// Package engine owns the wasmtime engine and its epoch ticker, the on-disk
// compile cache, and compiling and loading components into Programs: shared
// by content across the files that hold it (Open), and mapped from the
// cache with a prefault image of their memory (package prefault).
//
// What a component must be and what it links to is not the engine's: the
// runtime on top (package host) gives them as Options.Check and
// Options.Link, so that compiling a component into the cache (toolhostd
// compile) needs nothing but an engine. The engine imports neither host
// nor the gateway nor the contract.
package engine
