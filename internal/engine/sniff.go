package engine

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	wt "github.com/toolhostd/toolhostd/internal/wasmtime"
)

// wasmMagic opens every binary WebAssembly file, module or component.
var wasmMagic = []byte("\x00asm")

// coreModuleHeader opens a binary core module (version 1); a component's
// version and layer are 0x0d 0x00 0x01 0x00.
var coreModuleHeader = []byte("\x00asm\x01\x00\x00\x00")

// sniffLen is how much of a file without the magic is looked at to decide
// whether it is text (the component text format).
const sniffLen = 8 << 10

// checkComponentBytes refuses what is neither binary WebAssembly nor text
// that could be WAT, before wasmtime would parse it as text and complain
// about its UTF-8.
func checkComponentBytes(b []byte) error {
	switch {
	case bytes.HasPrefix(b, coreModuleHeader):
		return fmt.Errorf("%w: it is a core WebAssembly module; toolhostd runs components of the "+
			"toolhost:agent world: build one from the agent's source with toolhostd build "+
			"(or wrap a wasip1 module with wasm-tools component new --adapt)", ErrNotComponent)
	case bytes.HasPrefix(b, wasmMagic):
		return nil
	case len(b) == 0:
		return fmt.Errorf("%w: the file is empty", ErrNotComponent)
	case !looksLikeText(b):
		return fmt.Errorf("%w: no \\0asm header, and not text (WAT)", ErrNotComponent)
	}
	return nil
}

// looksLikeText reports whether the start of b is UTF-8 without control
// characters other than whitespace.
func looksLikeText(b []byte) bool {
	if len(b) > sniffLen {
		b = b[:sniffLen]
		// Do not hold a rune cut at the boundary against the file.
		for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
			if utf8.RuneStart(b[i]) {
				if !utf8.FullRune(b[i:]) {
					b = b[:i]
				}
				break
			}
		}
	}
	if !utf8.Valid(b) {
		return false
	}
	for _, c := range b {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' || c == 0x7f {
			return false
		}
	}
	return true
}

// binaryForm returns the binary form of a component file for wasmtime to
// compile, having parsed what can be parsed cheaply: text goes through
// wasmtime's WAT parser, a binary has its section framing walked. A file
// that fails here fails before its compile is announced.
func binaryForm(b []byte) ([]byte, error) {
	if !bytes.HasPrefix(b, wasmMagic) {
		return wt.WAT2Wasm(b)
	}
	return b, checkSections(b)
}

// checkSections walks the sections after the 8-byte preamble (an id byte,
// a LEB128 u32 size, that many bytes; the same framing for modules and
// components) and refuses a file that ends inside one.
func checkSections(b []byte) error {
	if len(b) < 8 {
		return fmt.Errorf("malformed component: the file ends inside its 8-byte header (%d bytes)", len(b))
	}
	for off := 8; off < len(b); {
		start := off
		off++ // section id
		size, n := uleb32(b[off:])
		if n == 0 {
			return fmt.Errorf("malformed component: the size of the section at byte %d is cut or too large", start)
		}
		off += n
		if uint64(off)+uint64(size) > uint64(len(b)) {
			return fmt.Errorf("malformed component: the section at byte %d declares %d bytes, the file ends %d bytes later (truncated?)",
				start, size, len(b)-off)
		}
		off += int(size)
	}
	return nil
}

// uleb32 decodes an unsigned LEB128 value of at most 32 bits from the
// start of b and returns it and its length, or a length of 0 when b ends
// inside it or it does not fit in 32 bits.
func uleb32(b []byte) (uint32, int) {
	var v uint64
	for i := 0; i < len(b) && i < 5; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			if v > 1<<32-1 {
				return 0, 0
			}
			return uint32(v), i + 1
		}
	}
	return 0, 0
}
