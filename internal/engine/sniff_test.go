package engine

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	wt "github.com/toolhostd/toolhostd/internal/wasmtime"
)

// TestLoadNotAComponent: random bytes, an empty file and a core-module-less
// binary blob are "not a WebAssembly component", not a complaint about
// UTF-8; text still goes to wasmtime as WAT (and a WAT component loads).
func TestLoadNotAComponent(t *testing.T) {
	s := newTestEngine(t)
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
			p, err := s.LoadFile(path)
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
	if _, err := s.Load("prose.wat", []byte("hello, world\n")); err == nil || errors.Is(err, ErrNotComponent) || strings.Contains(err.Error(), "utf-8") {
		t.Errorf("text: %v, want wasmtime's parse error", err)
	}
	// A WAT component longer than what is sniffed loads.
	pad := strings.Repeat(";; é\n", (sniffLen+7)/5)
	if p, err := s.Load("padded.wat", []byte(pad+watSmall)); err != nil {
		t.Errorf("padded WAT: %v", err)
	} else {
		p.Close()
	}
	cut := []byte(strings.Repeat("a", sniffLen-1) + "é" + watSmall)
	if !looksLikeText(cut) {
		t.Error("a rune across the sniffed boundary made the file binary")
	}
}

// TestLoadRefusedBeforeCompiling: a core module is named as one, with the
// way to a component; a file that does not parse (WAT with a syntax error,
// a binary cut short) fails without the "compiling NAME" line that
// announces a compile, and wasmtime's errors are one line.
func TestLoadRefusedBeforeCompiling(t *testing.T) {
	s := newTestEngine(t)
	bin, err := wt.WAT2Wasm([]byte(watSmall))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		data      []byte
		want      string
		compiling bool // the framing is sound: wasmtime's parser finds the fault
	}{
		{"core.wasm", []byte("\x00asm\x01\x00\x00\x00\x01\x04\x01\x60\x00\x00"),
			"load core.wasm: not a WebAssembly component: it is a core WebAssembly module; toolhostd runs components of the toolhost:agent world: build one from the agent's source with toolhostd build", false},
		{"syntax.wat", []byte("(component (func (export \"run\")"), "load syntax.wat: wasmtime: wat: ", false},
		{"cut.wasm", bin[:len(bin)/2], "load cut.wasm: malformed component: the section at byte ", false},
		{"badsize.wasm", append(bin[:8:8], 0x01, 0xff, 0xff, 0xff, 0xff, 0x7f), "load badsize.wasm: malformed component: the size of the section at byte 8 is cut or too large", false},
		{"unnamed-custom.wasm", append([]byte("\x00asm\x0d\x00\x01\x00"), 0x00, 0x00), "load unnamed-custom.wasm: wasmtime: compile component: ", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := s.Load(tc.name, tc.data)
			if err == nil {
				p.Close()
				t.Fatal("loaded")
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error = %q, want it to start with %q", err, tc.want)
			}
			if tc.name != "syntax.wat" && strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is more than one line", err)
			}
			if n := s.logs.FilterMessageSnippet("compiling " + tc.name).Len(); (n > 0) != tc.compiling {
				t.Errorf("%d compiling lines, want them: %v", n, tc.compiling)
			}
		})
	}
}

// FuzzCheckSections: the framing walk never panics, and what it accepts
// has sections that end exactly at the end of the file.
func FuzzCheckSections(f *testing.F) {
	bin, err := wt.WAT2Wasm([]byte(watSmall))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(bin)
	f.Add(bin[:len(bin)-1])
	f.Add([]byte("\x00asm\x0d\x00\x01\x00\x00\x80\x80\x80\x80\x10"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if checkSections(b) != nil {
			return
		}
		off := 8
		for off < len(b) {
			size, n := uleb32(b[off+1:])
			off += 1 + n + int(size)
		}
		if off != len(b) {
			t.Errorf("accepted sections ending at %d of %d bytes", off, len(b))
		}
	})
}
