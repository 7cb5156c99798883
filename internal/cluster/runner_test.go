package cluster_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

// event is one start or stop of an agent on a host.
type event struct {
	at    time.Time
	host  string
	agent string
	start bool
}

// world records what every host's runner starts and stops, and counts
// overlaps: a start of an agent that runs on another host.
type world struct {
	mu       sync.Mutex
	running  map[string]map[string]bool // agent -> hosts running it
	events   []event
	overlaps []string
	stopWait time.Duration // how long each Stop takes (an agent's grace)
}

func newWorld() *world { return &world{running: map[string]map[string]bool{}} }

// runner is one host's Runner over the world.
type runner struct {
	w    *world
	host string
}

func (w *world) runner(host string) *runner { return &runner{w: w, host: host} }

func (r *runner) Start(name string) {
	w := r.w
	w.mu.Lock()
	defer w.mu.Unlock()
	hs := w.running[name]
	if hs == nil {
		hs = map[string]bool{}
		w.running[name] = hs
	}
	if hs[r.host] {
		return
	}
	for h := range hs {
		w.overlaps = append(w.overlaps, fmt.Sprintf("%s started on %s while it runs on %s", name, r.host, h))
	}
	hs[r.host] = true
	w.events = append(w.events, event{at: time.Now(), host: r.host, agent: name, start: true})
}

func (r *runner) Stop(name string) {
	w := r.w
	w.mu.Lock()
	running := w.running[name][r.host]
	wait := w.stopWait
	w.mu.Unlock()
	if !running {
		return
	}
	time.Sleep(wait) // a slow stop is what the tests set stopWait for
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running[name][r.host] {
		delete(w.running[name], r.host)
		w.events = append(w.events, event{at: time.Now(), host: r.host, agent: name})
	}
}

func (r *runner) State(name string) string {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	if r.w.running[name][r.host] {
		return "running"
	}
	return ""
}

func (r *runner) Started(name string) bool { return r.State(name) == "running" }

// where maps each running agent to its hosts.
func (w *world) where() map[string][]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string][]string{}
	for a, hs := range w.running {
		for h := range hs {
			out[a] = append(out[a], h)
		}
	}
	return out
}

// onHost counts the agents running on host.
func (w *world) onHost(host string) int {
	n := 0
	for _, hs := range w.where() {
		for _, h := range hs {
			if h == host {
				n++
			}
		}
	}
	return n
}

// checkNoOverlap fails t for every overlap seen.
func (w *world) checkNoOverlap(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, o := range w.overlaps {
		t.Error("overlap:", o)
	}
}

// eventsSince returns a copy of the events at or after i, and the count.
func (w *world) eventsSince(i int) ([]event, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]event(nil), w.events[i:]...), len(w.events)
}

// exactlyOnce reports whether each of agents runs on exactly one host.
func (w *world) exactlyOnce(agents []string) bool {
	where := w.where()
	for _, a := range agents {
		if len(where[a]) != 1 {
			return false
		}
	}
	return true
}

func agentNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("agent-%03d", i)
	}
	return out
}

// history lists agent's events.
func (w *world) history(agent string) []event {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []event
	for _, ev := range w.events {
		if ev.agent == agent {
			out = append(out, ev)
		}
	}
	return out
}

// waitQuiet waits until no agent started or stopped for d (at most 20s).
func (w *world) waitQuiet(t *testing.T, d time.Duration) {
	t.Helper()
	_, last := w.eventsSince(0)
	since := time.Now()
	testenv.Eventually(t, 20*time.Second, fmt.Sprintf("no agent to start or stop for %v", d), func() bool {
		if _, n := w.eventsSince(0); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= d
	})
}

// haltRunner is a runner whose Stop first waits for a lock held
// elsewhere for long (the daemon's operation lock during a reload), and
// that is a Halter: Halt stops everything at once.
type haltRunner struct {
	*runner
	stopDelay time.Duration
	mu        sync.Mutex
	halted    bool
	halts     int
}

func (h *haltRunner) Stop(name string) {
	h.mu.Lock()
	d := h.stopDelay
	h.mu.Unlock()
	time.Sleep(d) // the lock held elsewhere, played
	h.runner.Stop(name)
}

func (h *haltRunner) setDelay(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopDelay = d
}

func (h *haltRunner) halted1() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.halts
}

func (h *haltRunner) Start(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.halted {
		h.runner.Start(name)
	}
}

func (h *haltRunner) Halt() {
	h.mu.Lock()
	h.halted = true
	h.halts++
	h.mu.Unlock()
	for a, hs := range h.w.where() {
		for _, host := range hs {
			if host == h.host {
				h.runner.Stop(a)
			}
		}
	}
}

func (h *haltRunner) Resume() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.halted = false
}
