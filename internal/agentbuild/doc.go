// Package agentbuild makes agent projects and builds them into components
// outside a checkout of toolhostd: `toolhostd new` writes a project from the
// templates embedded here, and `toolhostd build` turns a JS file
// (componentize-qjs or componentize-js) or a Go main package (a wasip1
// reactor module componentized with jco and the preview1 reactor adapter)
// into a component of the world agent in the WIT this toolhostd serves.
//
// The npm tools of each toolchain are installed on its first use, at the
// versions package.json pins (Pins), into the user's cache; the Go SDK is embedded as a module zip
// and served to the go command from a file GOPROXY in the same cache.
// Nothing here knows the wasm runtime: the result is a file.
package agentbuild
