// Package toolname makes MCP tool names acceptable to the model APIs and
// maps them back: OpenAI wants ^[a-zA-Z0-9_-]{1,64}$ (Anthropic the same
// characters), while an MCP tool name may hold dots, slashes, anything.
package toolname

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// MaxLen is the longest name both APIs accept.
const MaxLen = 64

// ErrClash: two MCP names of one Map would share an API name.
var ErrClash = errors.New("two tools would share a name on the model's API")

// API is the name an MCP tool has on a model API. A name the APIs accept
// is kept as it is (the model sees the name the server gave); any other
// (dots, slashes, spaces, too long, empty) becomes its acceptable
// characters, cut short, then "_" and 8 hex digits of its SHA-256, so that
// two MCP names do not share an API name in practice (Map checks).
func API(mcp string) string {
	if Valid(mcp) {
		return mcp
	}
	sum := sha256.Sum256([]byte(mcp))
	suffix := "_" + hex.EncodeToString(sum[:4])
	b := make([]byte, 0, MaxLen)
	for i := 0; i < len(mcp) && len(b) < MaxLen-len(suffix); i++ {
		c := mcp[i]
		if !okByte(c) {
			c = '_'
		}
		b = append(b, c)
	}
	return string(b) + suffix
}

// Valid reports whether the APIs accept s as a tool name.
func Valid(s string) bool {
	if s == "" || len(s) > MaxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !okByte(s[i]) {
			return false
		}
	}
	return true
}

func okByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// Map is the names of one request, both ways.
type Map struct {
	toAPI   map[string]string
	fromAPI map[string]string
}

// NewMap is an empty Map.
func NewMap() *Map { return &Map{toAPI: map[string]string{}, fromAPI: map[string]string{}} }

// Add maps mcp; it reports whether mcp was already there, and ErrClash
// (naming both) when another MCP name has the same API name.
func (m *Map) Add(mcp string) (dup bool, err error) {
	if _, ok := m.toAPI[mcp]; ok {
		return true, nil
	}
	api := API(mcp)
	if other, ok := m.fromAPI[api]; ok {
		return false, fmt.Errorf("%w: %q and %q would both be called %q", ErrClash, other, mcp, api)
	}
	m.toAPI[mcp], m.fromAPI[api] = api, mcp
	return false, nil
}

// API is the API name of mcp.
func (m *Map) API(mcp string) string {
	if a, ok := m.toAPI[mcp]; ok {
		return a
	}
	return API(mcp)
}

// MCP is the MCP name of an API name a model returned; a name not in the
// Map is returned as it is (calling it gives not-found).
func (m *Map) MCP(api string) string {
	if n, ok := m.fromAPI[api]; ok {
		return n
	}
	return api
}
