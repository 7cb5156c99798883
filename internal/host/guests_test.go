package host

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
	// guestJS010, guestGo010 and guestQJS010 are the same three probes as
	// built against toolhost:agent@0.1.0 on main at 28e150c, before 0.2.0
	// (testdata/v0.1.0/probe-<dir>.wasm.gz): the host must keep serving
	// them unchanged.
	guestJS010
	guestGo010
	guestQJS010
	// guestJS020, guestGo020 and guestQJS020 are the three probes as built
	// against toolhost:agent@0.2.0 on main at 8793120, before 0.3.0
	// (testdata/v0.2.0/probe-<dir>.wasm.gz).
	guestJS020
	guestGo020
	guestQJS020
)

var allGuests = []guest{guestJS, guestGo, guestQJS, guestJS010, guestGo010, guestQJS010, guestJS020, guestGo020, guestQJS020}

// currentGuests are the probes built from this checkout (for benchmarks).
var currentGuests = []guest{guestJS, guestGo, guestQJS}

// fixtureVersions are the world versions of the probes kept as fixtures.
var fixtureVersions = [...]string{"", "0.1.0", "0.2.0"}

func (g guest) String() string {
	name := [...]string{"componentize-js", "go", "componentize-qjs"}[g.toolchain()]
	if v := fixtureVersions[g/3]; v != "" {
		name += "-v" + v
	}
	return name
}

// toolchain is the guest's toolchain: guestJS, guestGo or guestQJS.
func (g guest) toolchain() guest { return g % 3 }

// fixture reports a probe kept as a fixture (built against an older
// version of the world).
func (g guest) fixture() bool { return g >= guestJS010 }

// version is the world version the guest was built against.
func (g guest) version() string {
	if g.fixture() {
		return fixtureVersions[g/3]
	}
	return "0.3.0"
}

// fixturePrefix marks the dir of a probe kept as a fixture in
// testdata/v<version> (see suite.program): "v0.1.0/test-agents".
const fixturePrefix = "v0."

// dir is the build/ directory of the guest's test agents, or
// "v<version>/" + that directory for a fixture.
func (g guest) dir() string {
	d := [...]string{"test-agents", "test-agents-go", "test-agents-qjs"}[g.toolchain()]
	if g.fixture() {
		return "v" + g.version() + "/" + d
	}
	return d
}

// fixturePath decompresses testdata/v<version>/<name>-<dir>.wasm.gz into a
// temporary directory of the suite (once) and returns the component's path.
func (s *suite) fixturePath(t testing.TB, dir, name string) string {
	t.Helper()
	version, sub, _ := strings.Cut(dir, "/")
	base := name + "-" + sub + ".wasm"
	if s.fixtureDir == "" {
		d, err := os.MkdirTemp("", "toolhostd-v010-")
		if err != nil {
			t.Fatal(err)
		}
		s.fixtureDir = d
		s.tempDirs = append(s.tempDirs, d)
	}
	out := filepath.Join(s.fixtureDir, version+"-"+base)
	if _, err := os.Stat(out); err == nil {
		return out
	}
	f, err := os.Open(filepath.Join("testdata", version, base+".gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", f.Name(), err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", f.Name(), err)
	}
	if err := os.WriteFile(out, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}

// forGuests runs f as one subtest per guest, each with the in-process
// server's records reset.
func forGuests(t *testing.T, f func(t *testing.T, g guest)) {
	t.Helper()
	forGuestsOf(t, allGuests, f)
}

func forGuestsOf(t *testing.T, gs []guest, f func(t *testing.T, g guest)) {
	t.Helper()
	for _, g := range gs {
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
