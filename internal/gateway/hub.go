// Package pump runs what sits between agents and their toolings: the calls
// behind call-tool (queued, at most max_concurrent_calls running per
// tooling, per-call timeouts, is-open and cancel), the resource
// pumps behind the subscriptions (one MCP subscription per uri however many
// agents subscribe, one read per update fanned out to every subscriber's
// inbox), the model requests behind the provider interface (chat, and
// chat-stream's deltas into the inbox with call-tool's is-open and cancel;
// chat.go), the per-agent tables of calls, streams and subscriptions that
// make handle drop and agent exit cancel everything they made, and the
// supervisor tree that keeps each tooling's session and resource pump
// running.
//
// Nothing here knows about WebAssembly: the host's WIT functions call the
// methods of Agent and Handle one to one.
package pump

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/thejerf/suture/v4"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/audit"
	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
)

// Defaults for Limits fields left at zero (the config's defaults).
const (
	DefaultMaxConcurrentCalls = 16
	DefaultCallTimeout        = 60 * time.Second
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

// EntriesFrom pairs every tooling of reg with the limits of its config.
func EntriesFrom(reg *mcpclient.Registry, cfgs map[string]*config.Tooling) []Entry {
	var out []Entry
	for _, name := range reg.Names() {
		t, _ := reg.Get(name)
		out = append(out, Entry{Tooling: t, Limits: LimitsFrom(cfgs[name])})
	}
	return out
}

// Hub serves a fixed set of toolings to any number of agents.
type Hub struct {
	log   *zap.Logger
	rts   map[string]*runtime
	names []string
	// ctx is the parent of every agent's context; it ends when Serve's
	// context does, cancelling every call.
	ctx    context.Context
	cancel context.CancelFunc
	// dyn lets toolings come and go while Serve runs (dynamic.go); its
	// mutex guards rts and names.
	dyn dynState
	// audit is the audit log (policy.go); nil: none.
	audit *audit.Log
	// prov serves the provider interface (chat.go).
	prov providerState
}

// runtime is everything the hub keeps for one tooling.
type runtime struct {
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

// NewHub makes the hub for entries and installs its resource pump as each
// tooling's observer. Calls run as soon as they are made (the tooling waits
// for its session, up to its connect timeout); sessions and resource pumps
// run under Serve.
func NewHub(entries []Entry, log *zap.Logger) *Hub {
	if log == nil {
		log = zap.NewNop()
	}
	log = log.Named("pump")
	h := &Hub{log: log, rts: make(map[string]*runtime, len(entries))}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	for _, e := range entries {
		lim := e.Limits
		if lim.MaxConcurrentCalls <= 0 {
			lim.MaxConcurrentCalls = DefaultMaxConcurrentCalls
		}
		if lim.CallTimeout <= 0 {
			lim.CallTimeout = DefaultCallTimeout
		}
		name := e.Tooling.Name()
		rl := log.With(zap.String("tooling", name))
		rt := &runtime{t: e.Tooling, name: name, limits: lim, log: rl}
		rt.gate = newGate(rt, lim.MaxConcurrentCalls)
		rt.pump = newResPump(rt)
		e.Tooling.SetObserver(rt.pump)
		h.rts[name] = rt
		h.names = append(h.names, name)
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
	root := suture.New("pump", suture.Spec{EventHook: hook})
	h.startTree(root, hook)
	err := root.Serve(ctx)
	h.cancel()
	h.waitCalls()
	h.waitChats()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// sessionService runs a tooling's Serve under its supervisor.
type sessionService struct{ t tooling.Tooling }

func (s sessionService) Serve(ctx context.Context) error { return s.t.Serve(ctx) }
func (s sessionService) String() string                  { return "session/" + s.t.Name() }

// NewAgent registers an agent: in is its inbox (the host owns it and its
// shutdown), grants reports the toolings it may get (nil: all).
func (h *Hub) NewAgent(name string, in *inbox.Inbox, grants func(tooling string) bool) *Agent {
	ctx, cancel := context.WithCancel(h.ctx)
	a := &Agent{
		hub:     h,
		name:    name,
		in:      in,
		grants:  grants,
		log:     h.log.With(zap.String("agent", name)),
		ctx:     ctx,
		cancel:  cancel,
		calls:   make(map[string]*call),
		subs:    make(map[string]*sub),
		handles: make(map[*Handle]struct{}),
		streams: make(map[string]*stream),
		provs:   make(map[*ProviderHandle]struct{}),
	}
	// Once the inbox is shut down no result can be delivered: every call of
	// the agent is cancelled.
	a.stopWatch = context.AfterFunc(in.Context(), cancel)
	return a
}

// Get returns a new handle on the tooling called name: not-found when there
// is none, denied when the agent was not granted it, cancelled after Close.
func (a *Agent) Get(name string) (*Handle, error) {
	rt, ok := a.hub.lookup(name)
	if !ok {
		return nil, tooling.Errorf(tooling.CodeNotFound, "no tooling named %q", name)
	}
	if a.grants != nil && !a.grants(name) {
		err := tooling.Errorf(tooling.CodeDenied, "agent %q is not granted tooling %q", a.name, name)
		a.deniedGet(name, err)
		return nil, err
	}
	hd := &Handle{a: a, rt: rt, pol: a.pol.View(name), calls: make(map[string]*call), subs: make(map[string]*sub)}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, errAgentClosed()
	}
	a.handles[hd] = struct{}{}
	return hd, nil
}

func errAgentClosed() *tooling.Error {
	return tooling.Errorf(tooling.CodeCancelled, "the agent is stopping")
}

func errHandleClosed() *tooling.Error {
	return tooling.Errorf(tooling.CodeCancelled, "the tooling handle was dropped")
}

func (rt *runtime) String() string { return fmt.Sprintf("tooling %q", rt.name) }
