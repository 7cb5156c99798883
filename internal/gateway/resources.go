package gateway

import (
	"context"
	"sync"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// Subscriber is the agent's end of a subscription (package contract's):
// the gateway opens and closes it and hands it what the subscription
// yields.
type Subscriber interface {
	// Open is called before the subscription is made; an error refuses it.
	Open() error
	// Close is called when the subscription is withdrawn; it reports
	// whether the subscription was still live for the agent.
	Close() bool
	// Updated gets the subscribed uri's inbox.ResourceUpdated after an
	// update (one event shared by every subscriber).
	Updated(ev inbox.Event)
	// ListUpdated gets the resource list after a change.
	ListUpdated(list []tooling.ResourceInfo)
	// Ended is called when the gateway ends the subscription (the tooling
	// was removed, a re-subscription failed) with the error that ends it.
	Ended(herr *tooling.Error)
}

// Sub is one subscription: to a uri, or to the resource list.
type Sub struct {
	id    string
	agent string // for the log
	uri   string
	list  bool
	to    Subscriber

	ended bool // guarded by resPump.mu: unsubscribed or failed
}

// NewSub makes the subscription id of agent to uri (list: to the resource
// list) for to; Subscribe or SubscribeList makes it live.
func NewSub(id, agent, uri string, list bool, to Subscriber) *Sub {
	return &Sub{id: id, agent: agent, uri: uri, list: list, to: to}
}

// ID is the subscription's id.
func (s *Sub) ID() string { return s.id }

// URI is the subscribed uri ("" for the resource list).
func (s *Sub) URI() string { return s.uri }

// List reports whether s subscribes to the resource list.
func (s *Sub) List() bool { return s.list }

// Subscribe makes the uri subscription s live: on the first subscriber of
// its uri the MCP subscription is made (ctx bounds it; its failure, e.g.
// unsupported, is returned).
func (sv *Served) Subscribe(ctx context.Context, s *Sub) error { return sv.pump.subscribe(ctx, s) }

// SubscribeList makes the resource-list subscription s live.
func (sv *Served) SubscribeList(s *Sub) error { return sv.pump.subscribeList(s) }

// Fanout fans rc out to the live subscribers of its uri, as the resource
// pump does after a read, and returns how many; the fan-out benchmark
// measures it.
func (sv *Served) Fanout(rc tooling.ResourceContent) int {
	p := sv.pump
	p.mu.Lock()
	u := p.uris[rc.URI]
	p.mu.Unlock()
	if u == nil {
		return 0
	}
	return p.fanout(u, inbox.ResourceUpdated{Content: rc})
}

// Unsubscribe ends s; after the last subscriber of a uri the MCP
// subscription is withdrawn. It returns whether s was live.
func (sv *Served) Unsubscribe(s *Sub) bool { return sv.pump.unsubscribe(s) }

// uriState is the shared state of every subscription to one uri.
type uriState struct {
	uri string
	// op serialises the MCP subscribe and unsubscribe of this uri.
	op sync.Mutex

	// guarded by resPump.mu
	refs    int             // subscribers, including ones mid-subscribe
	subs    map[string]*Sub // live subscribers by id
	active  bool            // the MCP subscription is made
	epoch   uint64          // bumped whenever active is cleared underneath subscribers
	reading bool            // a read (or its fan-out) is in flight
	dirty   bool            // an update came during the read

	buf []*Sub // the fan-out snapshot, reused; owned by the reading goroutine
}

// resPump is a tooling's resource pump: the refcounted MCP subscriptions,
// and the reads and fan-out that follow the server's notifications. It is
// the Observer the hub serves the tooling with (it ignores what comes
// once RemoveTooling took the tooling away) and a suture service (the
// reads run under it).
type resPump struct {
	s    *Served
	wake chan struct{}

	mu          sync.Mutex
	uris        map[string]*uriState
	pending     []*uriState // reads to start
	listSubs    map[string]*Sub
	listPending bool // a list fetch to start
	listReading bool
	listDirty   bool
}

func newResPump(s *Served) *resPump {
	return &resPump{
		s:        s,
		wake:     make(chan struct{}, 1),
		uris:     make(map[string]*uriState),
		listSubs: make(map[string]*Sub),
	}
}

func (p *resPump) String() string { return "resources/" + p.s.name }

func (p *resPump) kick() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// subscribe makes s live: on the first subscriber of its uri, the MCP
// subscription is made (its failure, e.g. unsupported, is returned).
func (p *resPump) subscribe(ctx context.Context, s *Sub) error {
	if err := s.to.Open(); err != nil {
		return err
	}
	p.mu.Lock()
	u := p.uris[s.uri]
	if u == nil {
		u = &uriState{uri: s.uri, subs: make(map[string]*Sub)}
		p.uris[s.uri] = u
	}
	u.refs++
	p.mu.Unlock()

	u.op.Lock()
	defer u.op.Unlock()
	for {
		p.mu.Lock()
		active, epoch := u.active, u.epoch
		p.mu.Unlock()
		if !active {
			if err := p.s.t.Subscribe(ctx, s.uri); err != nil {
				p.mu.Lock()
				u.refs--
				if u.refs == 0 && p.uris[s.uri] == u {
					delete(p.uris, s.uri)
				}
				p.mu.Unlock()
				s.to.Close()
				return tooling.AsError(err)
			}
			p.s.log.Debug("mcp subscription made", zap.String("uri", s.uri))
		}
		p.mu.Lock()
		if u.epoch != epoch {
			// A failed re-subscription (or the tooling's removal) ended the
			// MCP subscription while this one was being made: make it again
			// rather than join subscribers that nothing feeds.
			p.mu.Unlock()
			continue
		}
		u.active = true
		u.subs[s.id] = s
		p.mu.Unlock()
		return nil
	}
}

// subscribeList makes the resource-list subscription s live.
func (p *resPump) subscribeList(s *Sub) error {
	if err := s.to.Open(); err != nil {
		return err
	}
	p.mu.Lock()
	p.listSubs[s.id] = s
	p.mu.Unlock()
	return nil
}

// unsubscribe ends s and drops its undelivered update; after the last
// subscriber of a uri the MCP subscription is withdrawn. It returns whether
// s was live.
func (p *resPump) unsubscribe(s *Sub) bool {
	p.mu.Lock()
	if s.ended {
		p.mu.Unlock()
		return false
	}
	s.ended = true
	var u *uriState
	last := false
	if s.list {
		delete(p.listSubs, s.id)
	} else if u = p.uris[s.uri]; u != nil && u.subs[s.id] == s {
		delete(u.subs, s.id)
		u.refs--
		last = u.refs == 0
	}
	p.mu.Unlock()
	live := s.to.Close()
	if last {
		p.release(u)
	}
	p.s.log.Debug("unsubscribed", zap.String("agent", s.agent), zap.String("sub_id", s.id), zap.String("uri", s.uri))
	return live
}

// release withdraws the MCP subscription of u if nobody subscribes anymore.
func (p *resPump) release(u *uriState) {
	u.op.Lock()
	defer u.op.Unlock()
	p.mu.Lock()
	if u.refs > 0 {
		p.mu.Unlock()
		return
	}
	wasActive := u.active
	u.active = false
	p.mu.Unlock()
	if wasActive {
		ctx, cancel := context.WithTimeout(context.Background(), unsubscribeTimeout)
		err := p.s.t.Unsubscribe(ctx, u.uri)
		cancel()
		if err != nil {
			p.s.log.Warn("mcp unsubscribe failed", zap.String("uri", u.uri), zap.Error(err))
		} else {
			p.s.log.Debug("mcp subscription withdrawn", zap.String("uri", u.uri))
		}
	}
	p.mu.Lock()
	if u.refs == 0 && p.uris[u.uri] == u {
		delete(p.uris, u.uri)
	}
	p.mu.Unlock()
}

// ResourceUpdated is the tooling's notifications/resources/updated: one
// read, fanned out; while a read of uri is in flight further updates
// collapse into one more read.
func (p *resPump) ResourceUpdated(uri string) {
	if p.s.removed.Load() {
		return
	}
	p.mu.Lock()
	u := p.uris[uri]
	if u == nil || len(u.subs) == 0 {
		p.mu.Unlock()
		return
	}
	if u.reading {
		u.dirty = true
		p.mu.Unlock()
		return
	}
	u.reading = true
	p.pending = append(p.pending, u)
	p.mu.Unlock()
	p.kick()
}

// ResourceListChanged is the tooling's notifications/resources/list_changed:
// one fetch of the full list, fanned out; changes during a fetch collapse
// into one more fetch.
func (p *resPump) ResourceListChanged() {
	if p.s.removed.Load() {
		return
	}
	p.mu.Lock()
	if len(p.listSubs) == 0 {
		p.mu.Unlock()
		return
	}
	if p.listReading {
		p.listDirty = true
		p.mu.Unlock()
		return
	}
	p.listReading = true
	p.listPending = true
	p.mu.Unlock()
	p.kick()
}

// ResubscribeFailed ends every subscription to uri with one error envelope
// each. It runs on the tooling's goroutine and only takes the pump's lock.
func (p *resPump) ResubscribeFailed(uri string, err error) {
	if p.s.removed.Load() {
		return
	}
	herr := tooling.AsError(err)
	if herr.Code == tooling.CodeInternal {
		herr = tooling.Errorf(tooling.CodeUnavailable, "re-subscribing to %q after a reconnect failed: %s", uri, herr.Message)
	}
	p.mu.Lock()
	u := p.uris[uri]
	if u == nil {
		p.mu.Unlock()
		return
	}
	ended := make([]*Sub, 0, len(u.subs))
	for id, s := range u.subs {
		s.ended = true
		ended = append(ended, s)
		delete(u.subs, id)
		u.refs--
	}
	u.active = false // the tooling dropped it
	u.epoch++
	p.mu.Unlock()
	for _, s := range ended {
		s.to.Ended(herr)
		p.s.log.Warn("subscription ended: re-subscription failed", zap.String("agent", s.agent), zap.String("sub_id", s.id), zap.String("uri", uri), zap.Error(err))
	}
}

// Serve starts the reads and list fetches the notifications ask for and
// waits for them when ctx ends.
func (p *resPump) Serve(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	p.kick() // work noted before a restart
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.wake:
		}
		p.mu.Lock()
		work := p.pending
		p.pending = nil
		list := p.listPending
		p.listPending = false
		p.mu.Unlock()
		for _, u := range work {
			wg.Go(func() { p.readLoop(ctx, u) })
		}
		if list {
			wg.Go(func() { p.listLoop(ctx) })
		}
	}
}

// readLoop reads u and fans the content out, again while updates came in
// during the read.
func (p *resPump) readLoop(ctx context.Context, u *uriState) {
	for {
		p.mu.Lock()
		u.dirty = false
		p.mu.Unlock()
		rctx, cancel := context.WithTimeout(ctx, p.s.limits.CallTimeout)
		p.s.stats.reads.Add(1)
		rc, err := p.s.t.ReadResource(rctx, u.uri)
		cancel()
		if err != nil {
			p.s.log.Warn("reading an updated resource failed", zap.String("uri", u.uri), zap.Error(err))
		} else {
			p.fanout(u, inbox.ResourceUpdated{Content: rc})
		}
		p.mu.Lock()
		again := u.dirty && len(u.subs) > 0 && ctx.Err() == nil
		if !again {
			u.reading, u.dirty = false, false
		}
		p.mu.Unlock()
		if !again {
			return
		}
	}
}

// fanout puts ev into the inbox of every live subscriber of u under the
// subscriber's id (the inbox coalesces) and returns how many. Only the
// goroutine reading u calls it.
func (p *resPump) fanout(u *uriState, ev inbox.Event) int {
	p.mu.Lock()
	buf := u.buf[:0]
	for _, s := range u.subs {
		buf = append(buf, s)
	}
	p.mu.Unlock()
	for _, s := range buf {
		s.to.Updated(ev)
	}
	p.s.stats.updates.Add(int64(len(buf)))
	clear(buf) // keep no subscriber alive from here
	u.buf = buf[:0]
	return len(buf)
}

// listLoop fetches the resource list and fans it out, again while changes
// came in during the fetch.
func (p *resPump) listLoop(ctx context.Context) {
	var subs []*Sub
	for {
		p.mu.Lock()
		p.listDirty = false
		p.mu.Unlock()
		rctx, cancel := context.WithTimeout(ctx, p.s.limits.CallTimeout)
		p.s.stats.listFetches.Add(1)
		list, err := p.s.t.ListResources(rctx)
		cancel()
		if err != nil {
			p.s.log.Warn("fetching the changed resource list failed", zap.Error(err))
		} else {
			subs = subs[:0]
			p.mu.Lock()
			for _, s := range p.listSubs {
				subs = append(subs, s)
			}
			p.mu.Unlock()
			for _, s := range subs {
				s.to.ListUpdated(list)
			}
			p.s.stats.updates.Add(int64(len(subs)))
		}
		p.mu.Lock()
		again := p.listDirty && len(p.listSubs) > 0 && ctx.Err() == nil
		if !again {
			p.listReading, p.listDirty = false, false
		}
		p.mu.Unlock()
		if !again {
			return
		}
	}
}
