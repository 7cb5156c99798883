package host

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// watHello is watEcho's twin with other bytes: it returns a fixed string.
var watHello = runComponent("", "", "", `(call $ok (i32.const 16) (i32.const 4))`)

func writeComponent(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func runProgram(t *testing.T, h *Host, p *Program, input string) string {
	t.Helper()
	out, err := waitAgent(t, h.Start(p, AgentConfig{Name: "shared"}, input), 20*time.Second)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return out
}

// TestOpenShares: every Open of one component file gets the same Program,
// loaded once (one compile-cache lookup), also from many goroutines at
// once and through another path with the same content; a changed file
// gets a new one, while agents of the old version keep theirs.
func TestOpenShares(t *testing.T) {
	h := newCacheHost(t, filepath.Join(t.TempDir(), "cache"))
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.wat")
	writeComponent(t, path, watEcho)

	const n = 8
	progs := make([]*Program, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			p, err := h.Open(path)
			if err != nil {
				t.Error(err)
				return
			}
			progs[i] = p
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for _, p := range progs[1:] {
		if p != progs[0] {
			t.Fatal("two Opens of one file got different programs")
		}
	}
	if s := h.Cache().Stats(); s.Hits+s.Misses != 1 {
		t.Fatalf("%d opens made %+v compile-cache lookups, want 1", n, s)
	}
	old := progs[0]
	if old.Content() == "" {
		t.Fatal("a shared program has no content key")
	}
	if k, err := h.ContentKey(path); err != nil || k != old.Content() {
		t.Fatalf("ContentKey = %q, %v; want %q", k, err, old.Content())
	}

	twin := filepath.Join(dir, "twin.wat")
	writeComponent(t, twin, watEcho)
	p, err := h.Open(twin)
	if err != nil {
		t.Fatal(err)
	}
	if p != old {
		t.Error("another path with the same content got another program")
	}
	p.Close()

	// Change the file: a new program, a new content key; the old one
	// still runs for the agents that have it.
	writeComponent(t, path, watHello)
	if k, err := h.ContentKey(path); err != nil || k == old.Content() {
		t.Fatalf("ContentKey after the change = %q, %v; the old key was %q", k, err, old.Content())
	}
	fresh, err := h.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if fresh == old || fresh.Content() == old.Content() {
		t.Fatal("the changed file got the old program")
	}
	if out := runProgram(t, h, fresh, "ignored"); out != "grew" {
		t.Errorf("the new version said %q", out)
	}
	if out := runProgram(t, h, old, "old version"); out != "old version" {
		t.Errorf("the old version said %q", out)
	}
	for _, p := range progs {
		p.Close()
	}
	// The old version is released with its last user; twin still has it.
	again, err := h.Open(twin)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if again.Content() != old.Content() {
		t.Error("twin's content changed")
	}
	if out := runProgram(t, h, again, "twin"); out != "twin" {
		t.Errorf("twin said %q", out)
	}
}

// TestOpenFailure: a file that does not load fails every Open waiting
// for it, is not remembered, and loads once it is fixed.
func TestOpenFailure(t *testing.T) {
	h := newCacheHost(t, filepath.Join(t.TempDir(), "cache"))
	path := filepath.Join(t.TempDir(), "agent.wat")
	writeComponent(t, path, watNoRun)
	if _, err := h.Open(path); !errors.Is(err, ErrBadComponent) {
		t.Fatalf("Open of a component without run: %v", err)
	}
	if _, err := h.Open(filepath.Join(t.TempDir(), "missing.wasm")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open of a missing file: %v", err)
	}
	writeComponent(t, path, watEcho)
	p, err := h.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if out := runProgram(t, h, p, "fixed"); out != "fixed" {
		t.Errorf("run said %q", out)
	}
}
