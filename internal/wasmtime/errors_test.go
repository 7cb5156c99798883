package wasmtime

import (
	"bytes"
	"strings"
	"testing"
)

func TestFoldCauses(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"no chain", "expected `(`\n     --> <anon>:1:1", "expected `(`\n     --> <anon>:1:1"},
		{"one cause", "failed to parse WebAssembly module\n\nCaused by:\n    attempted to parse a wasm module with a component parser",
			"failed to parse WebAssembly module: attempted to parse a wasm module with a component parser"},
		{"numbered", "import `x` has the wrong type\n\nCaused by:\n    0: instance export `f` has the wrong type\n    1: expected func found nothing",
			"import `x` has the wrong type: instance export `f` has the wrong type: expected func found nothing"},
		{"one cause with a colon", "request failed\n\nCaused by:\n    404: not found", "request failed: 404: not found"},
		{"unnumbered lines keep their text", "a\n\nCaused by:\n    0: b\n    c: d", "a: 0: b: c: d"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := foldCauses(tc.in); got != tc.want {
				t.Errorf("foldCauses(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestCompileErrorOneLine: wasmtime's own error for a core module handed to
// the component parser comes back as one line, its cause after ": ".
func TestCompileErrorOneLine(t *testing.T) {
	e := mustEngine(t, EngineConfig{})
	_, err := NewComponent(e, []byte("\x00asm\x01\x00\x00\x00"))
	if err == nil {
		t.Fatal("a core module compiled as a component")
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "failed to parse WebAssembly module: attempted to parse a wasm module with a component parser") {
		t.Errorf("error = %q", msg)
	}
}

func TestWAT2Wasm(t *testing.T) {
	bin, err := WAT2Wasm([]byte("(component)"))
	if err != nil || !bytes.Equal(bin, []byte("\x00asm\x0d\x00\x01\x00")) {
		t.Errorf("(component) = %x, %v", bin, err)
	}
	bin, err = WAT2Wasm([]byte("(module)"))
	if err != nil || !bytes.Equal(bin, []byte("\x00asm\x01\x00\x00\x00")) {
		t.Errorf("(module) = %x, %v", bin, err)
	}
	if _, err := WAT2Wasm([]byte("garbage")); err == nil || !strings.Contains(err.Error(), "<anon>:1:1") {
		t.Errorf("garbage: %v", err)
	}
	if _, err := WAT2Wasm(nil); err == nil {
		t.Error("empty input translated")
	}
}
