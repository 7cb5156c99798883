package host

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadNotAComponent: random bytes, an empty file and a core-module-less
// binary blob are "not a WebAssembly component", not a complaint about
// UTF-8; text still goes to wasmtime as WAT (and a WAT component loads).
func TestLoadNotAComponent(t *testing.T) {
	s := env(t)
	rnd := rand.New(rand.NewPCG(9, 13))
	random := make([]byte, 64<<10)
	for i := range random {
		random[i] = byte(rnd.UintN(256))
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		data []byte
		msg  string
	}{
		{"random.wasm", random, "not a WebAssembly component: no \\0asm header, and not text (WAT)"},
		{"empty.wasm", nil, "not a WebAssembly component: the file is empty"},
		{"elf.wasm", []byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00"), "not a WebAssembly component: no \\0asm header, and not text (WAT)"},
		{"latin1.wat", []byte("(component) ;; caf\xe9"), "not a WebAssembly component: no \\0asm header, and not text (WAT)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name)
			if err := os.WriteFile(path, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			p, err := s.host.LoadFile(path)
			if err == nil {
				p.Close()
				t.Fatal("loaded")
			}
			if !errors.Is(err, ErrNotComponent) || err.Error() != "load "+path+": "+tc.msg {
				t.Errorf("error = %v, want %q (ErrNotComponent)", err, tc.msg)
			}
		})
	}
	// Text that is not a component is wasmtime's to judge.
	if _, err := s.host.Load("prose.wat", []byte("hello, world\n")); err == nil || errors.Is(err, ErrNotComponent) || strings.Contains(err.Error(), "utf-8") {
		t.Errorf("text: %v, want wasmtime's parse error", err)
	}
	// A WAT component longer than what is sniffed loads.
	pad := strings.Repeat(";; é\n", (sniffLen+7)/5)
	if p, err := s.host.Load("padded.wat", []byte(pad+watEcho)); err != nil {
		t.Errorf("padded WAT: %v", err)
	} else {
		p.Close()
	}
	cut := []byte(strings.Repeat("a", sniffLen-1) + "é" + watEcho)
	if !looksLikeText(cut) {
		t.Error("a rune across the sniffed boundary made the file binary")
	}
}
