// Package host runs agents on an engine (package engine): it owns the WIT
// host side of toolhost:agent, 0.1.0, 0.2.0 and 0.3.0 at once (the tooling,
// provider, messages, inbox and log interfaces wired onto packages
// contract, tooling, provider and inbox) and the key-value store 0.3.0
// imports (wasi:keyvalue/store, atomics and batch @0.2.0-draft2, onto the
// agent's buckets of package kv), the check of a component against
// the world, the closed WASI policy, and each agent's lifecycle and limits.
//
// The engine compiles and shares Programs; linking the WIT imports into a
// Program is the host's, given to the engine as a link function
// (EngineOptions), which keeps beside the linker whether the component
// receives messages.
package host
