// Package host runs agents: it owns the wasmtime engine and its epoch ticker,
// the on-disk compile cache, the WIT host side of toolhost:agent, 0.1.0 and
// 0.2.0 at once (the tooling, provider, inbox and log interfaces wired onto
// packages contract, tooling, provider and inbox), the closed WASI policy, and
// each agent's lifecycle and limits.
package host
