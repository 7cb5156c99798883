// Package host runs agents: it owns the wasmtime engine and its epoch ticker,
// the on-disk compile cache, the WIT host side of toolhost:agent (the
// tooling, inbox and log interfaces wired onto packages pump, tooling and
// inbox), the closed WASI policy, and each agent's lifecycle and limits.
package host
