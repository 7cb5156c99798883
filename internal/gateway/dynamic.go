package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/thejerf/suture/v4"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/tooling"
)

// Errors of AddTooling and RemoveTooling.
var (
	// ErrToolingExists is returned by AddTooling for a name the hub serves.
	ErrToolingExists = errors.New("the hub already serves a tooling of that name")
	// ErrNoTooling is returned by RemoveTooling for a name the hub does not
	// serve.
	ErrNoTooling = errors.New("the hub serves no tooling of that name")
	// ErrHubStopped is returned by AddTooling after Serve has returned.
	ErrHubStopped = errors.New("the hub has stopped")
)

// removeTimeout bounds how long RemoveTooling waits for the tooling's
// supervisor (its session, its server process, its resource pump) to stop.
const removeTimeout = 30 * time.Second

// dynState is what the hub keeps to change its toolings while Serve runs.
// Its mutex also guards Hub.rts and Hub.names.
type dynState struct {
	mu      sync.RWMutex
	root    *suture.Supervisor // set once Serve's tree runs (treeStart)
	hook    suture.EventHook
	tokens  map[string]suture.ServiceToken // each tooling's supervisor in root
	retired []*Served                      // removed runtimes, for Serve to wait on their calls
	stopped bool                           // Serve has returned
}

// removedFlag marks a runtime RemoveTooling took out of service.
type removedFlag struct{ atomic.Bool }

// toolingSupervisor is one tooling's sub-supervisor: its session and its
// resource pump.
func (h *Hub) toolingSupervisor(rt *Served, hook suture.EventHook) *suture.Supervisor {
	sup := suture.New("tooling/"+rt.name, suture.Spec{EventHook: hook})
	sup.Add(tracked{svc: sessionService{rt}, w: &h.services})
	sup.Add(tracked{svc: rt.pump, w: &h.services})
	return sup
}

// tracked runs a tooling's service as work Serve waits for: suture's
// Serve returns once it has cancelled its services, not once they have
// returned, and a session that logs or closes its server after that must
// still have an owner.
type tracked struct {
	svc suture.Service
	w   *workGroup
}

func (t tracked) Serve(ctx context.Context) error {
	errc := make(chan error, 1)
	if !t.w.goTracked(func() { errc <- t.svc.Serve(ctx) }) {
		return ctx.Err() // the hub is stopping
	}
	return <-errc
}

func (t tracked) String() string { return fmt.Sprint(t.svc) }

// treeStart is root's first service. It runs once root runs, and only
// then publishes root to AddTooling and RemoveTooling and adds a
// sub-supervisor for each tooling served at that moment: suture refuses to
// remove a service from a supervisor that has not started yet
// (ErrSupervisorNotStarted), and would start it later all the same.
type treeStart struct {
	h    *Hub
	root *suture.Supervisor
	hook suture.EventHook
}

func (t treeStart) Serve(ctx context.Context) error {
	t.h.publishTree(t.root, t.hook)
	<-ctx.Done()
	return ctx.Err()
}

func (treeStart) String() string { return "tooling tree" }

// publishTree records the running root for AddTooling and RemoveTooling
// and adds a sub-supervisor for each served tooling that has none.
func (h *Hub) publishTree(root *suture.Supervisor, hook suture.EventHook) {
	h.dyn.mu.Lock()
	defer h.dyn.mu.Unlock()
	h.dyn.root, h.dyn.hook = root, hook
	if h.dyn.tokens == nil {
		h.dyn.tokens = make(map[string]suture.ServiceToken, len(h.names))
	}
	for _, name := range h.names {
		if _, ok := h.dyn.tokens[name]; !ok {
			h.dyn.tokens[name] = root.Add(h.toolingSupervisor(h.rts[name], hook))
		}
	}
}

// waitCalls marks the hub stopped and waits for the call goroutines of
// every tooling it served, removed ones included. Serve calls it once its
// tree has stopped and every agent context is cancelled.
func (h *Hub) waitCalls() {
	h.dyn.mu.Lock()
	h.dyn.stopped = true
	rts := make([]*Served, 0, len(h.rts)+len(h.dyn.retired))
	for _, rt := range h.rts {
		rts = append(rts, rt)
	}
	rts = append(rts, h.dyn.retired...)
	h.dyn.mu.Unlock()
	for _, rt := range rts {
		rt.gate.stopAndWait()
	}
}

// AddTooling starts serving e's tooling: at once when Serve runs (under its
// own sub-supervisor beside the others), else when Serve starts. Agents
// can get it from then on (their grants permitting). It fails with
// ErrToolingExists for a name already served and ErrHubStopped after Serve
// has returned.
func (h *Hub) AddTooling(e Entry) error {
	if e.Tooling == nil {
		return errors.New("add tooling: no tooling")
	}
	name := e.Tooling.Name()
	rt := newServed(e, h.log)

	h.dyn.mu.Lock()
	defer h.dyn.mu.Unlock()
	switch {
	case h.dyn.stopped:
		return fmt.Errorf("add tooling %q: %w", name, ErrHubStopped)
	case h.rts[name] != nil:
		return fmt.Errorf("add tooling %q: %w", name, ErrToolingExists)
	}
	h.rts[name] = rt
	i, _ := slices.BinarySearch(h.names, name)
	h.names = slices.Insert(h.names, i, name)
	if h.dyn.root != nil {
		if h.dyn.tokens == nil {
			h.dyn.tokens = make(map[string]suture.ServiceToken)
		}
		h.dyn.tokens[name] = h.dyn.root.Add(h.toolingSupervisor(rt, h.dyn.hook))
	}
	h.log.Info("tooling added", zap.String("tooling", name))
	return nil
}

// RemoveTooling stops serving the tooling called name: its sub-supervisor
// is removed (the session is closed, a stdio server stopped, in-flight
// calls fail) and RemoveTooling waits for it, up to 30s. From then on every
// operation through a handle on it fails with unavailable, as do its calls
// still queued (when they would have run), get() of the
// name with not-found, and each live subscription to it ends with one
// unavailable error envelope. ErrNoTooling for a name not served.
func (h *Hub) RemoveTooling(name string) error {
	h.dyn.mu.Lock()
	rt := h.rts[name]
	if rt == nil {
		h.dyn.mu.Unlock()
		return fmt.Errorf("remove tooling %q: %w", name, ErrNoTooling)
	}
	delete(h.rts, name)
	if i, ok := slices.BinarySearch(h.names, name); ok {
		h.names = slices.Delete(h.names, i, i+1)
	}
	rt.removed.Store(true)
	h.dyn.retired = append(h.dyn.retired, rt)
	tok, served := h.dyn.tokens[name]
	delete(h.dyn.tokens, name)
	root, stopped := h.dyn.root, h.dyn.stopped
	h.dyn.mu.Unlock()

	var err error
	if served && root != nil && !stopped {
		// ErrSupervisorNotRunning: the tree stopped, and Serve waits for
		// the tooling's services.
		if err = root.RemoveAndWait(tok, removeTimeout); errors.Is(err, suture.ErrSupervisorNotRunning) {
			err = nil
		} else if err != nil {
			err = fmt.Errorf("remove tooling %q: its supervisor did not stop: %w", name, err)
		}
	}
	rt.pump.endAll(tooling.Errorf(tooling.CodeUnavailable, "tooling %q was removed from the configuration", name))
	h.log.Info("tooling removed", zap.String("tooling", name))
	return err
}

// endAll ends every live subscription of the pump with one error envelope
// each; the MCP subscriptions are not withdrawn (the session is gone).
func (p *resPump) endAll(herr *tooling.Error) {
	p.mu.Lock()
	var ended []*Sub
	for _, u := range p.uris {
		for id, s := range u.subs {
			s.ended = true
			ended = append(ended, s)
			delete(u.subs, id)
			u.refs--
		}
		u.active = false
		u.epoch++
	}
	for id, s := range p.listSubs {
		s.ended = true
		ended = append(ended, s)
		delete(p.listSubs, id)
	}
	p.mu.Unlock()
	for _, s := range ended {
		s.to.Ended(herr)
	}
}
