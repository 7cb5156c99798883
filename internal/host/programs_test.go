package host

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/engine"
	"github.com/toolhostd/toolhostd/internal/testenv"
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

// TestOpenContextGivesUpOnACompile: a caller whose context ends while the
// component compiles (a 12 MB componentize-js agent, seconds on a cold
// cache) gets its error at once; the compile goes on for a caller still
// waiting, which gets the Program. When every caller gave up, Close does
// not wait for the compile: the engine is released after it, and what it
// compiled for nobody is released too (no Program left alive).
func TestOpenContextGivesUpOnACompile(t *testing.T) {
	path := testenv.Agent(t, "agents", "hello")
	const promptly = 2 * time.Second

	// openCancelled opens path on h with a context cancelled as soon as
	// the compile is under way, and checks that it returned promptly.
	openCancelled := func(t *testing.T, h *Host) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		// Cancelled once the load logs "compiling PATH": the compile is
		// under way.
		logs := env(t).logs
		before := logs.FilterMessageSnippet("compiling " + path).Len()
		go func() {
			defer cancel()
			if err := testenv.Poll(60*time.Second, func() bool {
				return logs.FilterMessageSnippet("compiling "+path).Len() > before
			}); err != nil {
				t.Errorf("%v waiting for the compile to begin", err)
			}
		}()
		start := time.Now()
		_, err := h.OpenContext(ctx, path)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("OpenContext with a cancelled context: %v", err)
		}
		if took := time.Since(start); took > promptly {
			t.Fatalf("OpenContext returned %v after its context was cancelled, want under %v", took, promptly)
		}
		if h.Compiling() != 1 {
			t.Fatal("the compile did not go on after its caller gave up (or it was already done: too fast a machine for this test)")
		}
	}

	t.Run("another caller still waits", func(t *testing.T) {
		h := newCacheHost(t, filepath.Join(t.TempDir(), "cache"))
		got := make(chan error, 1)
		var p *Program
		go func() {
			var err error
			p, err = h.Open(path)
			got <- err
		}()
		openCancelled(t, h)
		select {
		case err := <-got:
			if err != nil {
				t.Fatalf("the caller that waited: %v", err)
			}
		case <-time.After(120 * time.Second):
			t.Fatal("the compile did not end within 120s")
		}
		if out, err := waitAgent(t, h.Start(p, AgentConfig{Name: "hello"}, `{"toolings": []}`), 60*time.Second); err != nil {
			t.Fatalf("the program the compile loaded: %v (%q)", err, out)
		}
		p.Close()
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-h.Released(): // at once: no compile is left
		default:
			t.Fatal("Close with no compile in progress did not release the engine")
		}
	})

	t.Run("nobody waits", func(t *testing.T) {
		cache := filepath.Join(t.TempDir(), "cache")
		h := newCacheHost(t, cache)
		openCancelled(t, h)
		start := time.Now()
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > promptly {
			t.Fatalf("Close took %v with a compile in progress, want under %v", took, promptly)
		}
		select {
		case <-h.Released():
			t.Fatal("the engine was released under a compile in progress")
		default:
		}
		closeHost(t, h, 120*time.Second)
		if n := h.Live(); n != 0 {
			t.Fatalf("%d programs alive after the abandoned compile ended, want 0", n)
		}
		// The compile's work is kept for the next start.
		if m, _ := filepath.Glob(filepath.Join(cache, "*"+engine.CacheExt)); len(m) != 1 {
			t.Errorf("cache entries after the abandoned compile: %v, want 1", m)
		}
		if _, err := h.OpenContext(context.Background(), path); !errors.Is(err, engine.ErrClosed) {
			t.Errorf("OpenContext on a closed host: %v", err)
		}
	})
}

// closeHost closes h and waits up to d for its engine to be released.
func closeHost(t *testing.T, h *Host, d time.Duration) {
	t.Helper()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Released():
	case <-time.After(d):
		t.Fatalf("the engine was not released within %v of Close", d)
	}
}

// TestStopBeforeRun: an agent stopped while it waits for a start slot has
// nothing to wind down: it ends at once, interrupted, without waiting for
// its stop grace and without its run being called.
func TestStopBeforeRun(t *testing.T) {
	h, err := New(Options{Log: env(t).log, StartConcurrency: 1}, env(t).hub)
	if err != nil {
		t.Fatal(err)
	}
	defer closeHost(t, h, 10*time.Second)
	p, err := h.Load("echo", []byte(watEcho))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	h.starts <- struct{}{} // the only slot, taken
	a := h.Start(p, AgentConfig{Name: "queued", Limits: AgentLimits{StopGrace: time.Minute}}, "never echoed")
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	a.Stop()
	out, err := waitAgent(t, a, 5*time.Second)
	<-h.starts
	if !errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), "stopped before its run began") || out != "" {
		t.Fatalf("a stop before run: %q, %v; want interrupted before its run began", out, err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("it ended %v after Stop, want at once (not after its grace)", took)
	}
}
