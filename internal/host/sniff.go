package host

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// wasmMagic opens every binary WebAssembly file, module or component.
var wasmMagic = []byte("\x00asm")

// sniffLen is how much of a file without the magic is looked at to decide
// whether it is text (the component text format).
const sniffLen = 8 << 10

// checkComponentBytes refuses what is neither binary WebAssembly nor text
// that could be WAT, before wasmtime would parse it as text and complain
// about its UTF-8.
func checkComponentBytes(b []byte) error {
	switch {
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
