// Package wasmtime is toolhostd's cgo binding to the component-model C API of
// the wasmtime library bundled with wasmtime-go. It holds no project logic.
//
// wasmtime-go's Go API has no component model, but its static libwasmtime.a
// has the whole C API. This package declares the subset it uses in capi.h
// (checked against the real headers by TestHeaderLayout) and blank-imports
// wasmtime-go so that its link flags bring the library in.
//
// The objects mirror wasmtime's: an Engine compiles Components; a Linker
// holds host functions, host resources and WASI p2 and instantiates a
// Component into a Store; an Instance hands out Funcs; Func.Call takes and
// returns Vals, the Go form of every WIT value.
//
// Threads: an Engine, a Component and a Linker (once populated) may
// be shared by any number of goroutines. A Store and everything obtained from
// it (Instance, Func, ResourceAny, the Caller passed to host functions) must
// be used by one goroutine at a time; Engine.IncrementEpoch may be called
// from any goroutine.
//
// Lifetimes: every wrapper has an idempotent Close. Closing an Engine,
// Component or Linker does not invalidate Stores or Instances made from them
// (wasmtime reference-counts them internally). Closing a Store invalidates
// its Instances, Funcs and ResourceAnys. Using a closed object returns
// ErrClosed where the method returns an error and panics with a clear
// message otherwise; it never reaches C. No wrapper has a finalizer (Close
// frees), so none needs runtime.KeepAlive; Go memory passed to C (a
// component's bytes, a name) is kept alive by cgo for the call, and C
// copies what it keeps.
//
// Callbacks: host functions, resource destructors and WASI output writers
// are reached from C through an index into a handle table, never a Go
// pointer. A host
// function that returns an error or panics makes the guest trap; the Call
// that was running returns a *Trap whose Cause is that error (or a
// *PanicError). A WASI writer that panics fails the guest's write, and the
// Call returns its *PanicError.
//
// Known limits of wasmtime 39's C API, enforced here rather than left to
// abort the process: strings, chars and case names must be valid UTF-8 /
// Unicode scalar values; a borrowed host resource cannot be passed to the
// guest from outside a call (pass an owned one); Func.Call checks argument
// shapes in Go because a mismatch found by wasmtime while lowering leaves
// the instance unusable. As in the component model, a trap also leaves the
// instance unusable ("cannot enter component instance"): make a new one.
package wasmtime
