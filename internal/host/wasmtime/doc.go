// Package wasmtime is toolhostd's cgo binding to the component-model C API of
// the wasmtime library bundled with wasmtime-go. It holds no project logic.
package wasmtime
