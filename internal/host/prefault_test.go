package host

import (
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/engine"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestPrefaultStart: on wasmtime's real mappings, the first agent of a
// program teaches its start write set at its first recv, and the agents
// instantiated after it get those pages made private before their guest
// runs (package prefault). A fresh cache directory gives the program a
// cache file of its own, so nothing else in the process has taught it; its
// first load compiles and then runs from the entry it wrote.
func TestPrefaultStart(t *testing.T) {
	s := env(t)
	path, err := testenv.AgentPath(s.root, "test-agents-qjs", "probe")
	if err != nil {
		t.Fatal(err)
	}
	// load loads path on a new Host with opts; both closed at the end.
	load := func(opts Options) (*Host, *Program) {
		opts.Log = s.log
		h, err := New(opts, s.hub)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		p, err := h.LoadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return h, p
	}
	h, p := load(Options{Engine: engine.Options{CacheDir: t.TempDir()}})
	if p.Image() == nil {
		t.Fatal("a program mapped from its cache file has no prefault image")
	}
	start := func(name string) *Agent {
		return h.Start(p, AgentConfig{Name: name, Limits: AgentLimits{StopGrace: 10 * time.Second}}, ranInput)
	}
	first := start("prefault-first")
	testenv.Eventually(t, 20*time.Second, "the first agent to teach its write set", func() bool { pages, _ := p.Image().Stats(); return pages > 0 })
	pages, populated := p.Image().Stats()
	if populated != 0 {
		t.Fatalf("%d instantiations populated before any was learnt", populated)
	}
	learnt := s.logs.FilterMessage("start write set learnt").FilterField(zap.String("agent", "prefault-first")).All()
	if len(learnt) != 1 || learnt[0].ContextMap()["pages"] != int64(pages) {
		t.Fatalf("learnt log lines %v, want one for prefault-first with pages=%d", learnt, pages)
	}
	agents := []*Agent{first}
	for i := range 3 {
		agents = append(agents, start(fmt.Sprintf("prefault-%d", i)))
	}
	testenv.Eventually(t, 20*time.Second, "the later agents to be populated", func() bool { _, n := p.Image().Stats(); return n == 3 })
	// In run (a stop before would be an interrupt): each logged its first
	// step and waits in recv.
	testenv.Eventually(t, 20*time.Second, "every agent in its run", func() bool {
		for _, a := range agents {
			if s.logs.FilterMessage(ranLine).FilterField(zap.String("agent", a.Name())).Len() == 0 {
				return false
			}
		}
		return true
	})
	for _, a := range agents {
		a.Stop()
	}
	for _, a := range agents {
		if _, err := waitAgent(t, a, 20*time.Second); err != nil {
			t.Errorf("%s: %v", a.Name(), err)
		}
	}
	if again, _ := p.Image().Stats(); again != pages {
		t.Errorf("write set %d pages after the later agents, was %d: learnt once", again, pages)
	}

	if _, q := load(Options{Engine: engine.Options{CacheDir: h.Cache().Dir(), NoPrefault: true}}); q.Image() != nil {
		t.Fatal("NoPrefault: the program has a prefault image")
	}
}
