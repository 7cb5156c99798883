package host

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	wt "github.com/toolhostd/toolhostd/internal/host/wasmtime"
)

// TestContractSignatures: every guest's probe imports every function of
// the world, each with the type the host's table says; so the table is
// the world as three toolchains compile it.
func TestContractSignatures(t *testing.T) {
	s := env(t)
	for _, g := range allGuests {
		t.Run(g.String(), func(t *testing.T) {
			p := s.program(t, g.dir(), "probe")
			if err := checkImports(p.Component()); err != nil {
				t.Fatal(err)
			}
			imports, err := p.Component().Imports()
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			version := ""
			for _, it := range imports {
				if v := versionOf(it.Name); v != "" {
					version = v
				}
				if _, ok := contractFuncs[it.Name]; !ok {
					continue
				}
				for _, f := range it.Exports {
					if f.Kind == wt.ItemFunc {
						seen[it.Name+"#"+f.Name] = true
					}
				}
			}
			// The fixtures stay what 0.1.0 and 0.2.0 built; every other probe (JS and Go) is 0.3.0.
			if version != g.version() {
				t.Errorf("the probe imports toolhost:agent@%s, want %s", version, g.version())
			}
			for iface, funcs := range contractFuncs {
				if versionOf(iface) != version {
					continue
				}
				for _, name := range slices.Sorted(maps.Keys(funcs)) {
					if !seen[iface+"#"+name] {
						t.Errorf("the probe does not import %s#%s", iface, name)
					}
				}
			}
		})
	}
}

// TestGoGuestMismatch: a Go agent built against a world whose
// inbox.pending returns u64 is refused at load, naming the function and
// both types (without the check, wasmtime's instantiation error names
// neither).
func TestGoGuestMismatch(t *testing.T) {
	s := env(t)
	_, err := s.host.LoadFile(s.root + "/build/test-agents-go/mismatch.wasm")
	if !errors.Is(err, ErrBadComponent) {
		t.Fatalf("err = %v, want ErrBadComponent", err)
	}
	for _, want := range []string{"toolhost:agent/inbox@0.1.0#pending", "as func() -> u64", "provides func() -> u32"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
