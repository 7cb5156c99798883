package engine

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestCompileCacheRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	c, err := OpenCompileCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("cache dir mode = %v, want 0700", st.Mode().Perm())
	}
	key := c.Key([]byte("component"), "fp")
	if key == c.Key([]byte("component"), "fp2") || key == c.Key([]byte("component2"), "fp") {
		t.Fatal("key ignores the fingerprint or the bytes")
	}
	if _, ok := c.Get(key); ok {
		t.Fatal("hit on an empty cache")
	}
	payload := bytes.Repeat([]byte("artifact"), 1000)
	if err := c.Put(key, payload); err != nil {
		t.Fatal(err)
	}
	got, ok := c.Get(key)
	if !ok || !bytes.Equal(got, payload) {
		t.Fatalf("Get after Put: ok=%v, equal=%v", ok, bytes.Equal(got, payload))
	}
	if s := c.Stats(); s != (CacheStats{Hits: 1, Misses: 1}) {
		t.Fatalf("stats = %+v", s)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*.tmp"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestCompileCacheDamagedEntries(t *testing.T) {
	payload := bytes.Repeat([]byte{1, 2, 3, 4}, 4096)
	cases := []struct {
		name   string
		damage func([]byte) []byte
	}{
		{"truncated", func(b []byte) []byte { return b[:len(b)/2] }},
		{"shorter than trailer", func(b []byte) []byte { return b[:5] }},
		{"empty", func([]byte) []byte { return nil }},
		{"flipped payload bit", func(b []byte) []byte { b[100] ^= 0x40; return b }},
		{"wrong magic", func(b []byte) []byte { b[len(b)-16] = 'X'; return b }},
		{"appended bytes", func(b []byte) []byte { return append(b, 0) }},
		{"foreign file", func([]byte) []byte { return []byte("\x00asm\x0d\x00\x01\x00not ours at all....") }},
	}
	for _, tc := range cases {
		for _, lookup := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/lookup=%v", tc.name, lookup), func(t *testing.T) {
				c, err := OpenCompileCache(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				key := c.Key(payload, "fp")
				if err := c.Put(key, payload); err != nil {
					t.Fatal(err)
				}
				p := c.Path(key)
				data, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, tc.damage(data), 0o600); err != nil {
					t.Fatal(err)
				}
				if lookup {
					if _, ok := c.Lookup(key); ok {
						t.Fatal("Lookup returned a damaged entry")
					}
				} else if _, ok := c.Get(key); ok {
					t.Fatal("a damaged entry was returned")
				}
				if _, err := os.Stat(p); !os.IsNotExist(err) {
					t.Fatalf("damaged entry not removed: %v", err)
				}
				if s := c.Stats(); s.Corrupt != 1 || s.Hits != 0 {
					t.Fatalf("stats = %+v", s)
				}
			})
		}
	}
}

func TestCompileCacheLookup(t *testing.T) {
	c, err := OpenCompileCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	key := c.Key([]byte("component"), "fp")
	if _, ok := c.Lookup(key); ok {
		t.Fatal("hit on an empty cache")
	}
	payload := bytes.Repeat([]byte("artifact"), 100000)
	if err := c.Put(key, payload); err != nil {
		t.Fatal(err)
	}
	p, ok := c.Lookup(key)
	if !ok || p != c.Path(key) {
		t.Fatalf("Lookup = %q, %v", p, ok)
	}
	if s := c.Stats(); s != (CacheStats{Hits: 1, Misses: 1}) {
		t.Fatalf("stats = %+v", s)
	}
}
