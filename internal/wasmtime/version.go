package wasmtime

// Version is the version of the wasmtime C library this binding declares
// against (WASMTIME_VERSION in wasmtime.h; checked by the header test).
const Version = "39.0.0"
