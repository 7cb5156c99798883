package host

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolhostd/toolhostd/internal/engine"
)

// newCacheHost is a Host of its own with a fresh compile cache, serving the
// shared hub.
func newCacheHost(t *testing.T, dir string) *Host {
	t.Helper()
	h, err := New(Options{Engine: engine.Options{CacheDir: dir}, Log: env(t).log}, env(t).hub)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.Close()
		<-h.Released() // after any compile Close did not wait for
	})
	return h
}

// loadAndRun loads watEcho on h and runs it once.
func loadAndRun(t *testing.T, h *Host) {
	t.Helper()
	p, err := h.Load("echo", []byte(watEcho))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	out, err := waitAgent(t, h.Start(p, AgentConfig{Name: "cached"}, "from the cache"), 20*time.Second)
	if err != nil || out != "from the cache" {
		t.Fatalf("run = %q, %v", out, err)
	}
}

func TestHostCompileCache(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	h := newCacheHost(t, dir)
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("cache dir mode: %v, %v; want 0700", st.Mode().Perm(), err)
	}
	key := h.Cache().Key([]byte(watEcho), h.Fingerprint())
	entry := h.Cache().Path(key)
	want := func(step string, s engine.CacheStats) {
		t.Helper()
		if got := h.Cache().Stats(); got != s {
			t.Fatalf("%s: stats %+v, want %+v", step, got, s)
		}
		if _, err := os.Stat(entry); err != nil {
			t.Fatalf("%s: no cache entry: %v", step, err)
		}
	}

	loadAndRun(t, h)
	want("first load", engine.CacheStats{Misses: 1})
	loadAndRun(t, h)
	want("second load", engine.CacheStats{Hits: 1, Misses: 1})

	// A damaged entry (bad checksum) is dropped and recompiled.
	data, err := os.ReadFile(entry)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(entry, data, 0o600); err != nil {
		t.Fatal(err)
	}
	loadAndRun(t, h)
	want("damaged entry", engine.CacheStats{Hits: 1, Misses: 2, Corrupt: 1})
	loadAndRun(t, h)
	want("after recompiling", engine.CacheStats{Hits: 2, Misses: 2, Corrupt: 1})

	// A foreign entry (sound checksum, not a wasmtime artifact) is refused
	// by wasmtime, dropped and recompiled.
	if err := h.Cache().Put(key, []byte("\x7fELF but not what wasmtime wrote")); err != nil {
		t.Fatal(err)
	}
	loadAndRun(t, h)
	want("foreign entry", engine.CacheStats{Hits: 3, Misses: 2, Corrupt: 2})
	loadAndRun(t, h)
	want("after replacing it", engine.CacheStats{Hits: 4, Misses: 2, Corrupt: 2})

	// A second host (a restart) starts from the cache.
	h2 := newCacheHost(t, dir)
	loadAndRun(t, h2)
	if s := h2.Cache().Stats(); s != (engine.CacheStats{Hits: 1}) {
		t.Fatalf("restarted host: stats %+v, want one hit", s)
	}
}

func TestHostWithoutCache(t *testing.T) {
	h := newCacheHost(t, "")
	if h.Cache() != nil {
		t.Fatal("a cache without a directory")
	}
	loadAndRun(t, h)
}

// TestCompileIsLogged: a component compiled (not taken from the cache)
// says so at info before compiling, naming the cache directory, and how
// long it took after; a start from the cache logs neither.
func TestCompileIsLogged(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	obs, logs := observer.New(zapcore.InfoLevel)
	h, err := New(Options{Engine: engine.Options{CacheDir: dir}, Log: zap.New(obs)}, env(t).hub)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	compiles := func() []observer.LoggedEntry {
		return logs.FilterFieldKey("component").AllUntimed()
	}
	loadClose := func() {
		t.Helper()
		p, err := h.Load("echo.wat", []byte(watEcho))
		if err != nil {
			t.Fatal(err)
		}
		p.Close()
	}
	loadClose()
	got := compiles()
	if len(got) != 2 {
		t.Fatalf("logged %d compile lines, want 2: %+v", len(got), got)
	}
	if got[0].Message != "compiling echo.wat (first start; cached in "+dir+")" || got[0].Level != zapcore.InfoLevel {
		t.Errorf("before: %s %q", got[0].Level, got[0].Message)
	}
	d, ok := got[1].ContextMap()["duration"].(time.Duration)
	if got[1].Message != "compiled echo.wat" || got[1].Level != zapcore.InfoLevel || !ok || d <= 0 {
		t.Errorf("after: %s %q %v", got[1].Level, got[1].Message, got[1].ContextMap())
	}
	loadClose()
	if n := len(compiles()); n != 2 {
		t.Errorf("a start from the cache logged %d more compile lines", n-2)
	}
}
