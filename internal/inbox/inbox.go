// Package inbox is the per-agent queue of the guest contract's inbox
// interface: envelopes in arrival order, a capacity shared by open calls and
// undelivered envelopes (a call is refused rather than a result dropped),
// in-place coalescing of resource updates per subscription, dropping of
// undelivered envelopes on cancel and unsubscribe, and the shutdown
// envelope after which nothing more is delivered.
//
// Ids come in two kinds. A call id is reserved (Reserve) when the call is
// made, which takes one unit of capacity; Deliver fills the reservation with
// the call's one envelope; Cancel releases the reservation or drops the
// undelivered envelope. A stream id (a subscription) is opened (OpenStream);
// Update enqueues or coalesces its updates; EndStream appends a final event
// and ends it; CloseStream ends it and drops what is undelivered. Every
// operation is atomic under one mutex, so a cancel or unsubscribe that
// returns true is never followed by a delivery of that id.
//
// A chat stream (chat.go) is a reserved call that also takes chat-delta
// text before its one terminal envelope: the undelivered text of a stream is
// held in one entry that further deltas extend (merged, never dropped), so a
// slow agent makes the inbox hold at most its capacity plus one delta per
// stream whose terminal envelope is not yet received.
//
// An Inbox has no goroutine: Recv waits on a notification channel.
package inbox

import (
	"context"
	"sync"
	"time"

	"github.com/toolhostd/toolhostd/internal/config"
)

// Inbox is one agent's queue. All methods are safe for concurrent use.
type Inbox struct {
	capacity int
	notify   chan struct{} // one token: something may be ready
	ctx      context.Context
	stop     context.CancelFunc // ends ctx at Shutdown

	mu       sync.Mutex
	queue    queue // the envelopes in arrival order
	ids      index // what each id open or undelivered is
	shutdown bool  // the shutdown envelope is enqueued
	finished bool  // the shutdown envelope was delivered
	counts   counters
}

// New returns an empty inbox holding at most capacity open calls plus
// undelivered envelopes (config.DefaultInboxCapacity if capacity <= 0).
func New(capacity int) *Inbox {
	if capacity <= 0 {
		capacity = config.DefaultInboxCapacity
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Inbox{
		capacity: capacity,
		notify:   make(chan struct{}, 1),
		ctx:      ctx,
		stop:     stop,
		ids: index{
			results:  make(map[string]*entry),
			reserved: make(map[string]struct{}),
			streams:  make(map[string]*entry),
			chats:    make(map[string]bool),
			deltas:   make(map[string]*entry),
			replies:  make(map[string]struct{}),
		},
	}
}

// Capacity is the inbox's capacity.
func (q *Inbox) Capacity() int { return q.capacity }

// Reserve takes one unit of capacity for the call id, whose one envelope
// Deliver will put. ErrFull when open calls plus undelivered envelopes
// already reach the capacity, ErrShutdown after Shutdown, ErrDuplicate when
// id is in use (reserved, an open stream, or with an undelivered result or
// update).
func (q *Inbox) Reserve(id string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.shutdown:
		return ErrShutdown
	case q.usedLocked() >= q.capacity:
		return ErrFull
	}
	if q.ids.inUse(id) {
		return ErrDuplicate
	}
	q.ids.reserved[id] = struct{}{}
	return nil
}

// usedLocked is the capacity in use: open calls plus undelivered envelopes
// other than chat deltas.
func (q *Inbox) usedLocked() int { return len(q.ids.reserved) + q.queue.live - q.queue.deltaLive }

// Reserved reports whether the call id is reserved: made and neither
// delivered nor cancelled (the contract's is-open).
func (q *Inbox) Reserved(id string) bool {
	q.mu.Lock()
	_, ok := q.ids.reserved[id]
	q.mu.Unlock()
	return ok
}

// Deliver fills the reservation of the call id with its envelope, at the
// end of the queue. It returns false, dropping ev, when id is not reserved
// (cancelled, or never reserved) or the inbox is shut down.
func (q *Inbox) Deliver(id string, ev Event) bool {
	q.mu.Lock()
	if _, ok := q.ids.reserved[id]; !ok {
		q.mu.Unlock()
		return false
	}
	delete(q.ids.reserved, id)
	_, chat := q.ids.chats[id]
	delete(q.ids.chats, id) // an undelivered delta stays, no longer merging
	delete(q.ids.replies, id)
	if q.shutdown {
		q.mu.Unlock()
		return false
	}
	e := q.queue.newEntry(id, ev, kindCall)
	e.chat = chat
	q.ids.results[id] = e
	q.queue.push(e)
	q.mu.Unlock()
	q.signal()
	return true
}

// Cancel ends the call id: it releases its reservation, or drops its
// envelope if that is still undelivered (for a chat stream its undelivered
// delta too). It returns whether it did either; afterwards no envelope
// with id is delivered.
func (q *Inbox) Cancel(id string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	ok := false
	if _, open := q.ids.reserved[id]; open {
		delete(q.ids.reserved, id)
		delete(q.ids.chats, id)
		delete(q.ids.replies, id)
		ok = true
	} else if e, undelivered := q.ids.results[id]; undelivered {
		q.dropLocked(e)
		ok = true
	}
	if e := q.ids.deltas[id]; e != nil {
		q.dropLocked(e)
		ok = true
	}
	return ok
}

// OpenStream opens the subscription id so that Update may deliver to it.
// Streams take no capacity: their updates coalesce, so each holds at most
// one undelivered update. ErrShutdown after Shutdown, ErrDuplicate when id
// is in use.
func (q *Inbox) OpenStream(id string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutdown {
		return ErrShutdown
	}
	if q.ids.inUse(id) {
		return ErrDuplicate
	}
	q.ids.streams[id] = nil
	return nil
}

// Update delivers a ResourceUpdated or ResourceListUpdated event for the
// open stream id. While an earlier update of id is undelivered, ev replaces
// its payload in place, keeping its queue position (counted in Coalesced).
// It returns false, dropping ev, when the stream is not open.
func (q *Inbox) Update(id string, ev Event) bool {
	q.mu.Lock()
	pending, open := q.ids.streams[id]
	if !open || q.shutdown {
		q.mu.Unlock()
		return false
	}
	if pending != nil {
		pending.env.Event = ev
		q.counts.coalesced++
		q.mu.Unlock()
		return true
	}
	kind := kindUpdate
	if !isUpdate(ev) {
		kind = kindOther
	}
	e := q.queue.newEntry(id, ev, kind)
	if kind == kindUpdate {
		q.ids.streams[id] = e
	}
	q.queue.push(e)
	q.mu.Unlock()
	q.signal()
	return true
}

// EndStream ends the open stream id with one last envelope carrying ev
// (an Error when its re-subscription failed), after any undelivered update
// of it. It returns false, dropping ev, when the stream is not open.
func (q *Inbox) EndStream(id string, ev Event) bool {
	q.mu.Lock()
	if _, ok := q.ids.streams[id]; !ok {
		q.mu.Unlock()
		return false
	}
	delete(q.ids.streams, id) // an undelivered update stays, no longer coalescing
	if q.shutdown {
		q.mu.Unlock()
		return false
	}
	q.queue.push(q.queue.newEntry(id, ev, kindOther))
	q.mu.Unlock()
	q.signal()
	return true
}

// CloseStream ends the open stream id and drops its undelivered update. It
// returns whether the stream was open; afterwards no envelope with id is
// delivered.
func (q *Inbox) CloseStream(id string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	pending, open := q.ids.streams[id]
	if !open {
		return false
	}
	delete(q.ids.streams, id)
	if pending != nil {
		q.dropLocked(pending)
	}
	return true
}

// Shutdown enqueues the one shutdown envelope (id ShutdownID) and refuses
// every later reservation and delivery. Once it has been received, Recv and
// TryRecv return none at once. It returns false if already shut down.
func (q *Inbox) Shutdown() bool {
	q.mu.Lock()
	if q.shutdown {
		q.mu.Unlock()
		return false
	}
	q.shutdown = true
	clear(q.ids.reserved)
	clear(q.ids.streams)
	clear(q.ids.chats)
	clear(q.ids.replies)
	q.queue.push(q.queue.newEntry(ShutdownID, Shutdown{}, kindShutdown))
	q.mu.Unlock()
	q.stop()
	q.signal()
	return true
}

// Done is closed when Shutdown is called.
func (q *Inbox) Done() <-chan struct{} { return q.ctx.Done() }

// Context ends when Shutdown is called (for context.AfterFunc and the
// like); it carries no values or deadline.
func (q *Inbox) Context() context.Context { return q.ctx }

// Pending counts the undelivered envelopes.
func (q *Inbox) Pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.queue.live
}

// Stats are an inbox's counters.
type Stats struct {
	// Coalesced counts updates that replaced an undelivered one in place.
	Coalesced uint64
	// Merged counts chat deltas appended to an undelivered one.
	Merged uint64
	// Delivered counts envelopes returned by Recv and TryRecv.
	Delivered uint64
	// Pending counts undelivered envelopes; Open counts reserved calls.
	Pending, Open int
}

// Stats returns the inbox's counters.
func (q *Inbox) Stats() Stats {
	q.mu.Lock()
	defer q.mu.Unlock()
	return Stats{Coalesced: q.counts.coalesced, Merged: q.counts.merged, Delivered: q.counts.delivered, Pending: q.queue.live, Open: len(q.ids.reserved)}
}

// TryRecv returns the next envelope without waiting.
func (q *Inbox) TryRecv() (Envelope, bool) {
	q.mu.Lock()
	env, ok := q.popLocked()
	more := q.queue.live > 0
	q.mu.Unlock()
	if ok && more {
		q.signal() // pass the wake-up on to another waiter
	}
	return env, ok
}

// Recv returns the next envelope, waiting up to *timeout (nil: until one
// arrives or ctx ends). It returns none at once once the shutdown envelope
// has been received.
func (q *Inbox) Recv(ctx context.Context, timeout *time.Duration) (Envelope, bool) {
	var expired <-chan time.Time
	for {
		q.mu.Lock()
		if q.finished {
			q.mu.Unlock()
			return Envelope{}, false
		}
		env, ok := q.popLocked()
		more := q.queue.live > 0
		q.mu.Unlock()
		if ok {
			if more {
				q.signal()
			}
			return env, true
		}
		if expired == nil && timeout != nil {
			if *timeout <= 0 {
				return Envelope{}, false
			}
			t := time.NewTimer(*timeout)
			defer t.Stop()
			expired = t.C
		}
		select {
		case <-q.notify:
		case <-expired:
			return q.TryRecv()
		case <-ctx.Done():
			return Envelope{}, false
		}
	}
}

func (q *Inbox) signal() {
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

func (q *Inbox) dropLocked(e *entry) {
	switch {
	case e.kind == kindCall && q.ids.results[e.env.ID] == e:
		delete(q.ids.results, e.env.ID)
	case e.kind == kindDelta:
		if q.ids.deltas[e.env.ID] == e {
			delete(q.ids.deltas, e.env.ID)
		}
		q.queue.deltaLive--
		e.buf = nil
	}
	e.dead = true
	e.env = Envelope{}
	q.queue.live--
}

func (q *Inbox) popLocked() (Envelope, bool) {
	if q.finished {
		return Envelope{}, false
	}
	for q.queue.head < len(q.queue.items) {
		e := q.queue.items[q.queue.head]
		q.queue.items[q.queue.head] = nil
		q.queue.head++
		if e.dead {
			q.queue.recycle(e)
			continue
		}
		q.queue.live--
		switch e.kind {
		case kindCall:
			if q.ids.results[e.env.ID] == e {
				delete(q.ids.results, e.env.ID)
			}
		case kindUpdate:
			if p, ok := q.ids.streams[e.env.ID]; ok && p == e {
				q.ids.streams[e.env.ID] = nil
			}
		case kindDelta:
			if q.ids.deltas[e.env.ID] == e {
				delete(q.ids.deltas, e.env.ID)
			}
			q.queue.deltaLive--
			if e.reply {
				e.env.Event = ReplyDelta{Text: string(e.buf)}
			} else {
				e.env.Event = ChatDelta{Text: string(e.buf)}
			}
		case kindShutdown:
			q.finished = true
		}
		q.counts.delivered++
		env := e.env
		q.queue.recycle(e)
		q.queue.compact()
		return env, true
	}
	q.queue.compact()
	return Envelope{}, false
}
