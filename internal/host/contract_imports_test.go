package host

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	wt "github.com/toolhostd/toolhostd/internal/wasmtime"
)

// TestContractSignatures: every guest's probe imports every function of
// the world, each with the type the host's table says; so the table is
// the world as three toolchains compile it. The probes of 0.3.0 import
// the key-value store's too (wasi:keyvalue), the fixtures none of it.
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
				if v := versionOf(iface); v != version && (kvFuncs[iface] == nil || version != "0.3.0") {
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

// TestKeyValueImports: a Go agent imports the store only if it uses it
// (the bench agent does not), a JS agent always (the toolchains import the
// whole world), and the fixtures built before 0.3.0 never.
func TestKeyValueImports(t *testing.T) {
	s := env(t)
	for _, tc := range []struct {
		g     guest
		agent string
		want  bool
	}{
		{guestGo, "bench", false},
		{guestGo, "probe", true},
		{guestJS, "bench", true},
		{guestQJS, "bench", true},
		{guestJS020, "probe", false},
		{guestGo020, "probe", false},
	} {
		imports, err := s.program(t, tc.g.dir(), tc.agent).Component().Imports()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, it := range imports {
			if kvFuncs[it.Name] != nil {
				n++
			}
		}
		if tc.want && n != len(kvFuncs) || !tc.want && n != 0 {
			t.Errorf("%s %s imports %d of the %d wasi:keyvalue interfaces", tc.g, tc.agent, n, len(kvFuncs))
		}
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

// TestKeyValueWrongImport: a component importing a wasi:keyvalue function
// with another type than the host's is refused at load, naming the
// function and both types.
func TestKeyValueWrongImport(t *testing.T) {
	s := env(t)
	wat := runComponent(`(import "wasi:keyvalue/atomics@0.2.0-draft2" (instance (export "increment" (func (param "key" string) (result u32)))))`,
		"", "", `(call $ok (local.get $in) (local.get $len))`)
	p, err := s.host.Load("kv-wrong", []byte(wat))
	if err == nil {
		p.Close()
		t.Fatal("loaded")
	}
	for _, want := range []string{"wasi:keyvalue/atomics@0.2.0-draft2#increment", "as func(string) -> u32", "provides func(borrow, string, s64) -> result<s64, "} {
		if !errors.Is(err, ErrBadComponent) || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want ErrBadComponent saying %q", err, want)
		}
	}
}
