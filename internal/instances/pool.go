// Package instances keeps the live instances of one per-session agent: the
// first message of a session starts an instance for it, later messages of
// that session go to the same instance in the order they were accepted, a
// message without a session gets an instance of its own, and an instance
// with nothing to do (no message open, no call, stream or send open,
// nothing in its inbox) for the idle timeout is stopped. Past
// max_instances a new session stops the longest-idle instance first, and
// is refused (busy) when every instance is working.
//
// Work in flight is never reaped. Nothing here knows how an instance is
// made: the daemon hands a Pool a Start function.
package instances

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// Instance is one running instance of the agent.
type Instance interface {
	// Mailbox brings messages into it.
	Mailbox() *message.Mailbox
	// Busy reports open work: a message open, a call, stream or send
	// open, or an envelope undelivered.
	Busy() bool
	// Stop asks it to end (shutdown envelope, grace, interrupt); Done is
	// closed once it has.
	Stop()
	Done() <-chan struct{}
}

// StartFunc starts an instance for session, or for the one-off message
// whose id is oneOff (session ""); ctx is the delivery's, carrying the
// message's trace context (its cancellation is not the instance's).
type StartFunc func(ctx context.Context, session, oneOff string) (Instance, error)

// States of an instance, as Status reports them.
const (
	StateStarting = "starting"
	StateRunning  = "running"
	StateStopping = "stopping"
)

// Options configure a Pool.
type Options struct {
	Agent        string
	IdleTimeout  time.Duration
	MaxInstances int
	Start        StartFunc
	Log          *zap.Logger
	// Now is the clock (time.Now).
	Now func() time.Time
}

// Pool is one agent's live instances. Serve runs its reaper; when Serve
// ends every instance is stopped and waited for.
type Pool struct {
	o    Options
	log  *zap.Logger
	tick time.Duration

	mu      sync.Mutex
	live    map[string]*entry // by key: the session, or "#"+message id
	ending  map[*entry]bool   // stopping
	closed  bool
	started uint64
	idle    uint64
	wg      sync.WaitGroup // one per started instance, until it ended
}

type entry struct {
	key, session string
	oneOff       string // the message id of a one-off's instance
	inst         Instance
	pending      []*message.Message // accepted while it starts, in order
	ready        bool
	since        time.Time // started
	lastBusy     time.Time
}

// New is a pool; nothing runs until Serve.
func New(o Options) *Pool {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxInstances <= 0 {
		o.MaxInstances = 1
	}
	log := o.Log
	if log == nil {
		log = zap.NewNop()
	}
	tick := min(max(o.IdleTimeout/4, 10*time.Millisecond), time.Second)
	return &Pool{o: o, log: log.Named("instances").With(zap.String("agent", o.Agent)), tick: tick,
		live: map[string]*entry{}, ending: map[*entry]bool{}}
}

// Deliver hands m to the instance of its session, starting one if need be.
func (p *Pool) Deliver(ctx context.Context, m *message.Message) error { return p.deliver(ctx, m, true) }

// deliver is Deliver; retry lets a message that finds its session's
// instance ending start a new one, once (an instance that ends as it
// starts fails the message instead of starting instances in a loop).
func (p *Pool) deliver(ctx context.Context, m *message.Message, retry bool) error {
	key, oneOff := m.Session(), ""
	if key == "" {
		oneOff = m.ID()
		key = "#" + oneOff
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return message.Refuse(message.ErrUnavailable, tooling.CodeUnavailable, "agent %q is stopping", p.o.Agent)
	}
	if e := p.live[key]; e != nil {
		if !e.ready {
			e.pending = append(e.pending, m)
			p.mu.Unlock()
			return nil
		}
		p.mu.Unlock()
		err := e.inst.Mailbox().Put(m)
		if !retry || !errors.Is(err, message.ErrUnavailable) {
			return err
		}
		// Its instance is ending (it trapped, or was stopped): the session
		// gets a new one.
		p.mu.Lock()
		if p.live[key] == e {
			delete(p.live, key)
			p.ending[e] = true
		}
		p.mu.Unlock()
		return p.deliver(ctx, m, false)
	}
	if len(p.live) >= p.o.MaxInstances && !p.evictLocked() {
		p.mu.Unlock()
		return message.Refuse(message.ErrBusy, tooling.CodeBusy,
			"agent %q has %d instances working (agent.%s.max_instances = %d): retry later", p.o.Agent, len(p.live), p.o.Agent, p.o.MaxInstances)
	}
	e := &entry{key: key, session: m.Session(), oneOff: oneOff}
	p.live[key] = e
	p.mu.Unlock()
	return p.start(ctx, e, m)
}

// Wake starts the instance of session unless one is live: a durable
// instance its host's restart left to resume, which takes the messages
// it had open from its oplog, with no message to start it.
func (p *Pool) Wake(ctx context.Context, session string) error {
	return p.wake(ctx, &entry{key: session, session: session})
}

// WakeOneOff is Wake for the instance of the one-off message id.
func (p *Pool) WakeOneOff(ctx context.Context, id string) error {
	return p.wake(ctx, &entry{key: "#" + id, oneOff: id})
}

func (p *Pool) wake(ctx context.Context, e *entry) error {
	p.mu.Lock()
	switch {
	case p.closed:
		p.mu.Unlock()
		return message.Refuse(message.ErrUnavailable, tooling.CodeUnavailable, "agent %q is stopping", p.o.Agent)
	case p.live[e.key] != nil:
		p.mu.Unlock()
		return nil
	case len(p.live) >= p.o.MaxInstances && !p.evictLocked():
		p.mu.Unlock()
		return message.Refuse(message.ErrBusy, tooling.CodeBusy, "agent %q has %d instances working", p.o.Agent, len(p.live))
	}
	p.live[e.key] = e
	p.mu.Unlock()
	return p.start(ctx, e, nil)
}

// start starts e's instance (e is in live, not ready) and gives it m (nil:
// none) and the messages that came meanwhile.
func (p *Pool) start(ctx context.Context, e *entry, m *message.Message) error {
	inst, err := p.o.Start(ctx, e.session, e.oneOff)
	p.mu.Lock()
	pending := e.pending
	e.pending = nil
	if err != nil {
		delete(p.live, e.key)
		p.mu.Unlock()
		for _, pm := range pending {
			_ = pm.Fail(tooling.AsError(err).Code.String(), tooling.AsError(err).Message)
		}
		return err
	}
	now := p.o.Now()
	e.inst, e.ready, e.since, e.lastBusy = inst, true, now, now
	p.started++
	p.wg.Add(1)
	closed := p.closed
	p.mu.Unlock()
	go p.watch(e)
	if closed {
		inst.Stop()
	}
	if m != nil {
		err = inst.Mailbox().Put(m)
	}
	for _, pm := range pending {
		if perr := inst.Mailbox().Put(pm); perr != nil {
			herr := tooling.AsError(perr)
			_ = pm.Fail(herr.Code.String(), herr.Message)
		}
	}
	return err
}

// watch forgets e once its instance ended (stopped, or by itself).
func (p *Pool) watch(e *entry) {
	defer p.wg.Done()
	<-e.inst.Done()
	p.mu.Lock()
	if p.live[e.key] == e {
		delete(p.live, e.key)
	}
	delete(p.ending, e)
	p.mu.Unlock()
}

// evictLocked stops the longest-idle instance that is not busy, to make
// room; false when every instance is working or starting.
func (p *Pool) evictLocked() bool {
	var best *entry
	var bestIdle time.Time
	for _, e := range p.live {
		if !e.ready || e.inst.Busy() {
			continue
		}
		if last := p.lastActive(e); best == nil || last.Before(bestIdle) {
			best, bestIdle = e, last
		}
	}
	if best == nil {
		return false
	}
	p.log.Info("instance stopped to make room", zap.String("session", best.session), zap.Int("max_instances", p.o.MaxInstances))
	p.stopLocked(best)
	return true
}

func (p *Pool) lastActive(e *entry) time.Time {
	last := e.inst.Mailbox().LastActivity()
	if e.lastBusy.After(last) {
		last = e.lastBusy
	}
	return last
}

// stopLocked moves e from live to ending and stops its instance.
func (p *Pool) stopLocked(e *entry) {
	delete(p.live, e.key)
	p.ending[e] = true
	go e.inst.Stop()
}

// Serve reaps idle instances until ctx ends, then stops every instance and
// waits for them.
func (p *Pool) Serve(ctx context.Context) error {
	t := time.NewTicker(p.tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			p.stopAll()
			return ctx.Err()
		case <-t.C:
			p.reap()
		}
	}
}

// reap stops the instances idle for the idle timeout (one-off ones as soon
// as they are idle).
func (p *Pool) reap() {
	now := p.o.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.live {
		if !e.ready {
			continue
		}
		if e.inst.Busy() {
			e.lastBusy = now
			continue
		}
		if e.oneOff != "" || now.Sub(p.lastActive(e)) >= p.o.IdleTimeout {
			p.idle++
			p.log.Debug("idle instance stopped", zap.String("session", e.session), zap.Duration("idle_timeout", p.o.IdleTimeout))
			p.stopLocked(e)
		}
	}
}

func (p *Pool) stopAll() {
	p.mu.Lock()
	p.closed = true
	for _, e := range p.live {
		if e.ready {
			p.stopLocked(e)
		}
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// Status is one instance as ps shows it.
type Status struct {
	Session      string    `json:"session"`
	State        string    `json:"state"`
	Since        time.Time `json:"since"`
	Handled      uint64    `json:"messages_handled"`
	LastActivity time.Time `json:"last_activity"`
}

// List is the live and stopping instances, by session.
func (p *Pool) List() []Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Status, 0, len(p.live)+len(p.ending))
	add := func(e *entry, state string) {
		st := Status{Session: e.session, State: state, Since: e.since}
		if e.oneOff != "" {
			st.Session = ""
		}
		if e.ready {
			st.Handled = e.inst.Mailbox().Handled()
			st.LastActivity = p.lastActive(e)
		} else {
			st.State = StateStarting
		}
		out = append(out, st)
	}
	for _, e := range p.live {
		add(e, StateRunning)
	}
	for e := range p.ending {
		add(e, StateStopping)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Session < out[j].Session })
	return out
}

// Counts are the pool's counters.
type Counts struct {
	Live, Started, StoppedIdle int
}

// Counts returns the live instances and the counts of instances started
// and stopped idle.
func (p *Pool) Counts() Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Counts{Live: len(p.live), Started: int(p.started), StoppedIdle: int(p.idle)}
}
