// Package archtest holds only tests: they check docs/architecture.md
// against the module as `go list` sees it. The doc's package table must list
// every package of the module (and no other) with its floor; no package may
// import one on its own floor or above (an import back up), and the import
// graph has no cycle; only internal/wasmtime has cgo files; the `## Floors`
// diagram is generated from the table (`go test ./internal/archtest -update`
// rewrites it, a normal run fails when it is stale); and each path of
// `## Paths` names, in backticks, at least four functions or methods that
// exist in the non-test files of the packages it names. Beside the doc, no
// struct type of the module's non-test files (test kits aside) has more
// than 12 fields (structs_test.go).
package archtest
