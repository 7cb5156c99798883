package host

import "testing"

// guest is one toolchain's build of the contract probe: the contract tests
// run every scenario on each (see forGuests), with the same assertions.
type guest int

const (
	// guestJS is testdata/agents/probe.js built with componentize-js
	// (build/test-agents), the zero value: the default probe.
	guestJS guest = iota
	// guestGo is testdata/agents-go/probe, mainline Go with sdk/go
	// (build/test-agents-go).
	guestGo
	// guestQJS is probe.js built with componentize-qjs
	// (build/test-agents-qjs).
	guestQJS
)

var allGuests = []guest{guestJS, guestGo, guestQJS}

func (g guest) String() string {
	return [...]string{"componentize-js", "go", "componentize-qjs"}[g]
}

// dir is the build/ directory of the guest's test agents.
func (g guest) dir() string {
	return [...]string{"test-agents", "test-agents-go", "test-agents-qjs"}[g]
}

// forGuests runs f as one subtest per guest, each with the in-process
// server's records reset.
func forGuests(t *testing.T, f func(t *testing.T, g guest)) {
	t.Helper()
	for _, g := range allGuests {
		t.Run(g.String(), func(t *testing.T) {
			env(t) // resets the server's records
			f(t, g)
		})
	}
}

// exampleDirs are the build/ directories of the example agents: the JS
// examples built with componentize-js and componentize-qjs, and their Go
// ports.
var exampleDirs = []string{"agents", "agents-go", "agents-qjs"}

// forExamples runs f as one subtest per build of the examples, each with
// the in-process server's records reset.
func forExamples(t *testing.T, f func(t *testing.T, dir string)) {
	t.Helper()
	for _, dir := range exampleDirs {
		t.Run(dir, func(t *testing.T) {
			env(t)
			f(t, dir)
		})
	}
}
