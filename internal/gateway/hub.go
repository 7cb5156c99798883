// Package gateway is the way from agents to their toolings: one Hub serves
// a set of toolings, each under its own suture supervisor (its session and
// its resource pump), with its calls admitted through a gate (at most
// max_concurrent_calls running, the rest queued in order, each bounded by
// the call timeout) and its resource subscriptions shared (one MCP
// subscription per uri, one read per update fanned out to every
// subscriber). Toolings can be added and removed while the hub serves.
//
// The gateway knows no agents: package contract builds the agent's side of
// the contract on top of it, and hands calls and subscribers in.
package gateway

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/thejerf/suture/v4"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// unsubscribeTimeout bounds the MCP resources/unsubscribe made when the last
// subscriber of a uri goes (the caller does not wait on the server for more).
// It stays below the daemon's stop margin so that an agent's exit, which
// withdraws its subscriptions in parallel, is bounded by one such wait.
const unsubscribeTimeout = 3 * time.Second

// Limits are one tooling's call limits.
type Limits struct {
	// MaxConcurrentCalls is how many calls run at once (the rest queue).
	MaxConcurrentCalls int
	// CallTimeout bounds a call from call-tool to its result, queueing
	// included.
	CallTimeout time.Duration
}

// Entry is one tooling the hub serves.
type Entry struct {
	Tooling tooling.Tooling
	Limits  Limits
}

// LimitsFrom takes the limits out of a [tooling.<name>] config.
func LimitsFrom(c *config.Tooling) Limits {
	if c == nil {
		return Limits{}
	}
	return Limits{MaxConcurrentCalls: c.MaxConcurrentCalls, CallTimeout: c.CallTimeout.Duration}
}

// Hub serves a fixed set of toolings to any number of agents.
type Hub struct {
	log   *zap.Logger
	rts   map[string]*Served
	names []string
	// ctx is the parent of every agent's context; it ends when Serve's
	// context does, cancelling every call.
	ctx    context.Context
	cancel context.CancelFunc
	// dyn lets toolings come and go while Serve runs (dynamic.go); its
	// mutex guards rts and names.
	dyn dynState
	// work is the other work Serve waits for (Go).
	work workGroup
	// services are the toolings' sessions and resource pumps, which Serve
	// waits for (dynamic.go's tracked).
	services workGroup
}

// Served is everything the hub keeps for one tooling it serves.
type Served struct {
	t      tooling.Tooling
	name   string
	limits Limits
	log    *zap.Logger
	gate   *gate
	pump   *resPump
	stats  counters
	// removed is set by RemoveTooling (dynamic.go).
	removed removedFlag
}

// withDefaults is l with config's defaults for the fields left at zero.
func (l Limits) withDefaults() Limits {
	if l.MaxConcurrentCalls <= 0 {
		l.MaxConcurrentCalls = config.DefaultMaxConcurrentCalls
	}
	if l.CallTimeout <= 0 {
		l.CallTimeout = config.DefaultCallTimeout
	}
	return l
}

// newServed makes the hub's state for e.
func newServed(e Entry, log *zap.Logger) *Served {
	lim := e.Limits.withDefaults()
	name := e.Tooling.Name()
	s := &Served{t: e.Tooling, name: name, limits: lim, log: log.With(zap.String("tooling", name))}
	s.gate = newGate(s, lim.MaxConcurrentCalls)
	s.pump = newResPump(s)
	return s
}

// NewHub makes the hub for entries. Calls run as soon as they are made
// (the tooling waits for its session, up to its connect timeout);
// sessions and resource pumps run under Serve, each session reporting its
// notifications to its tooling's resource pump.
func NewHub(entries []Entry, log *zap.Logger) *Hub {
	if log == nil {
		log = zap.NewNop()
	}
	log = log.Named("gateway")
	h := &Hub{log: log, rts: make(map[string]*Served, len(entries))}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	for _, e := range entries {
		s := newServed(e, log)
		h.rts[s.name] = s
		h.names = append(h.names, s.name)
	}
	sort.Strings(h.names)
	return h
}

// Names returns the served toolings' names, sorted.
func (h *Hub) Names() []string {
	h.dyn.mu.RLock()
	defer h.dyn.mu.RUnlock()
	return append([]string(nil), h.names...)
}

// Serve runs the supervisor tree until ctx ends: a root with one
// sub-supervisor per tooling holding its session (Tooling.Serve) and its
// resource pump. A tooling's failures restart only its own services, never
// its siblings'. Call goroutines exist only while a call runs (see gate);
// when ctx ends every agent's calls are cancelled and Serve waits for them.
// Serve is called once.
func (h *Hub) Serve(ctx context.Context) error {
	stop := context.AfterFunc(ctx, h.cancel)
	defer stop()
	hook := func(e suture.Event) {
		h.log.Warn("supervisor event", zap.String("event", e.String()))
	}
	root := suture.New("gateway", suture.Spec{EventHook: hook})
	root.Add(treeStart{h: h, root: root, hook: hook})
	err := root.Serve(ctx)
	h.cancel()
	h.services.stopAndWait()
	h.waitCalls()
	h.work.stopAndWait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// sessionService runs a tooling's Serve under its supervisor, its
// notifications going to the tooling's resource pump.
type sessionService struct{ s *Served }

func (s sessionService) Serve(ctx context.Context) error { return s.s.t.Serve(ctx, s.s.pump) }
func (s sessionService) String() string                  { return "session/" + s.s.name }

// Context is the parent of every agent's context: it ends when Serve's
// does.
func (h *Hub) Context() context.Context { return h.ctx }

// Lookup returns the tooling called name, if the hub serves it.
func (h *Hub) Lookup(name string) (*Served, bool) {
	h.dyn.mu.RLock()
	defer h.dyn.mu.RUnlock()
	s, ok := h.rts[name]
	return s, ok
}

// Go runs f on a goroutine that Serve waits for before it returns; false
// (f not run) once Serve is returning. Contract's chat streams run so.
func (h *Hub) Go(f func()) bool { return h.work.goTracked(f) }

// workGroup is the goroutines of Go.
type workGroup struct {
	mu      sync.Mutex
	stopped bool
	wg      sync.WaitGroup
}

func (w *workGroup) goTracked(f func()) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return false
	}
	w.wg.Go(f)
	return true
}

// stopAndWait refuses new goroutines and waits for the running ones.
func (w *workGroup) stopAndWait() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	w.wg.Wait()
}

// Name is the tooling's configured name.
func (s *Served) Name() string { return s.name }

// Kind is the tooling's implementation, e.g. "mcp".
func (s *Served) Kind() string { return s.t.Kind() }

// Tooling is the tooling itself.
func (s *Served) Tooling() tooling.Tooling { return s.t }

// Limits are the tooling's call limits, defaults applied.
func (s *Served) Limits() Limits { return s.limits }

// Log is the tooling's logger.
func (s *Served) Log() *zap.Logger { return s.log }

// Removed is the error of every operation on a tooling RemoveTooling took
// away (unavailable); nil while it is served.
func (s *Served) Removed() *tooling.Error {
	if s.removed.Load() {
		return tooling.Errorf(tooling.CodeUnavailable, "tooling %q was removed from the configuration", s.name)
	}
	return nil
}

// CountBusy counts a call refused with busy (the agent's inbox was full).
func (s *Served) CountBusy() { s.stats.busy.Add(1) }

func (s *Served) String() string { return fmt.Sprintf("tooling %q", s.name) }
