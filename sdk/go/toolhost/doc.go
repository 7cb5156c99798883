// Package toolhost is the guest SDK for writing toolhostd agents in Go: the
// whole toolhost:agent@0.1.0 world (wit/agent.wit) for mainline Go's
// GOOS=wasip1 GOARCH=wasm, with the canonical ABI glue written by hand.
//
// An agent is a package main that registers its entry point from an init
// function and has an empty main:
//
//	func init() {
//		toolhost.Run(func(input string) (string, error) {
//			t, err := toolhost.Get("everything")
//			if err != nil {
//				return "", err // e.g. errors.Is(err, toolhost.Denied)
//			}
//			defer t.Close()
//			res, err := t.CallToolBlocking("echo", map[string]any{"message": input})
//			if err != nil {
//				return "", err
//			}
//			v, err := res.Result()
//			if err != nil {
//				return "", err
//			}
//			return v.Text(), nil
//		})
//	}
//
//	func main() {}
//
// It is built as a reactor module and turned into a component with the
// WASI preview1 reactor adapter (the repository's Makefile does both):
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o agent.core.wasm .
//	node scripts/componentize-go.mjs --wit wit/agent.wit --world agent agent.core.wasm agent.wasm
//
// The API maps the world one to one: Get and the methods of Tooling
// (Close drops the handle), Recv/TryRecv/Pending with the event variant as
// the Event types, Log with the four levels, host errors as *HostError
// whose ErrorCode works with errors.Is, and Run for the run export.
//
// Host calls block the whole module (a wasm guest is one thread);
// goroutines run only while run's handler is running. Strings passed to
// the host must be valid UTF-8. A single import's result (all its strings
// and lists) is lowered into a reserved region that starts at ReserveSize
// (8 MiB) and grows after large results; one larger than the region
// traps, so call Reserve before a call that may return more.
//
// Outside wasip1 the package compiles, its layout and lifting are tested
// natively, and every host call panics.
package toolhost
