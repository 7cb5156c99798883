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

// compactAfter is the number of consumed slots at the front of the queue
// after which the queue is compacted when they are at least half of it.
const compactAfter = 256

type entryKind uint8

const (
	kindCall     entryKind = iota // the result of a reserved call
	kindUpdate                    // a coalescing update of an open stream
	kindOther                     // a stream's final event
	kindShutdown                  // the shutdown envelope
	kindDelta                     // the merged undelivered text of a chat stream
)

type entry struct {
	env   Envelope
	kind  entryKind
	dead  bool   // dropped by Cancel or CloseStream; skipped by recv
	buf   []byte // kindDelta: the merged text, lifted into a ChatDelta (or ReplyDelta) at delivery
	chat  bool   // kindCall: the terminal envelope of a chat stream (or a reply)
	reply bool   // kindDelta: of a reply stream, lifted into a ReplyDelta
}

// Inbox is one agent's queue. All methods are safe for concurrent use.
type Inbox struct {
	capacity int
	notify   chan struct{} // one token: something may be ready
	ctx      context.Context
	stop     context.CancelFunc // ends ctx at Shutdown

	mu        sync.Mutex
	queue     []*entry // queue[head:] are undelivered (some dead)
	head      int
	live      int                 // undelivered, not dead
	results   map[string]*entry   // undelivered call results
	reserved  map[string]struct{} // open calls
	streams   map[string]*entry   // open subscriptions: their undelivered update or nil
	chats     map[string]bool     // reserved calls that are chat streams: true once a delta came
	deltas    map[string]*entry   // undelivered delta of a chat stream
	replies   map[string]struct{} // the chats that are replies to a message sent (message.go)
	deltaLive int                 // undelivered deltas (not counted against the capacity)
	free      []*entry            // recycled entries
	shutdown  bool                // the shutdown envelope is enqueued
	finished  bool                // the shutdown envelope was delivered
	coalesced uint64
	merged    uint64
	delivered uint64
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
		results:  make(map[string]*entry),
		reserved: make(map[string]struct{}),
		streams:  make(map[string]*entry),
		chats:    make(map[string]bool),
		deltas:   make(map[string]*entry),
		replies:  make(map[string]struct{}),
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
	if q.inUseLocked(id) {
		return ErrDuplicate
	}
	q.reserved[id] = struct{}{}
	return nil
}

// usedLocked is the capacity in use: open calls plus undelivered envelopes
// other than chat deltas.
func (q *Inbox) usedLocked() int { return len(q.reserved) + q.live - q.deltaLive }

// Reserved reports whether the call id is reserved: made and neither
// delivered nor cancelled (the contract's is-open).
func (q *Inbox) Reserved(id string) bool {
	q.mu.Lock()
	_, ok := q.reserved[id]
	q.mu.Unlock()
	return ok
}

// Deliver fills the reservation of the call id with its envelope, at the
// end of the queue. It returns false, dropping ev, when id is not reserved
// (cancelled, or never reserved) or the inbox is shut down.
func (q *Inbox) Deliver(id string, ev Event) bool {
	q.mu.Lock()
	if _, ok := q.reserved[id]; !ok {
		q.mu.Unlock()
		return false
	}
	delete(q.reserved, id)
	_, chat := q.chats[id]
	delete(q.chats, id) // an undelivered delta stays, no longer merging
	delete(q.replies, id)
	if q.shutdown {
		q.mu.Unlock()
		return false
	}
	e := q.newEntry(id, ev, kindCall)
	e.chat = chat
	q.results[id] = e
	q.pushLocked(e)
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
	if _, open := q.reserved[id]; open {
		delete(q.reserved, id)
		delete(q.chats, id)
		delete(q.replies, id)
		ok = true
	} else if e, undelivered := q.results[id]; undelivered {
		q.dropLocked(e)
		ok = true
	}
	if e := q.deltas[id]; e != nil {
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
	if q.inUseLocked(id) {
		return ErrDuplicate
	}
	q.streams[id] = nil
	return nil
}

// Update delivers a ResourceUpdated or ResourceListUpdated event for the
// open stream id. While an earlier update of id is undelivered, ev replaces
// its payload in place, keeping its queue position (counted in Coalesced).
// It returns false, dropping ev, when the stream is not open.
func (q *Inbox) Update(id string, ev Event) bool {
	q.mu.Lock()
	pending, open := q.streams[id]
	if !open || q.shutdown {
		q.mu.Unlock()
		return false
	}
	if pending != nil {
		pending.env.Event = ev
		q.coalesced++
		q.mu.Unlock()
		return true
	}
	kind := kindUpdate
	if !isUpdate(ev) {
		kind = kindOther
	}
	e := q.newEntry(id, ev, kind)
	if kind == kindUpdate {
		q.streams[id] = e
	}
	q.pushLocked(e)
	q.mu.Unlock()
	q.signal()
	return true
}

// EndStream ends the open stream id with one last envelope carrying ev
// (an Error when its re-subscription failed), after any undelivered update
// of it. It returns false, dropping ev, when the stream is not open.
func (q *Inbox) EndStream(id string, ev Event) bool {
	q.mu.Lock()
	if _, ok := q.streams[id]; !ok {
		q.mu.Unlock()
		return false
	}
	delete(q.streams, id) // an undelivered update stays, no longer coalescing
	if q.shutdown {
		q.mu.Unlock()
		return false
	}
	q.pushLocked(q.newEntry(id, ev, kindOther))
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
	pending, open := q.streams[id]
	if !open {
		return false
	}
	delete(q.streams, id)
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
	clear(q.reserved)
	clear(q.streams)
	clear(q.chats)
	clear(q.replies)
	q.pushLocked(q.newEntry(ShutdownID, Shutdown{}, kindShutdown))
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
	return q.live
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
	return Stats{Coalesced: q.coalesced, Merged: q.merged, Delivered: q.delivered, Pending: q.live, Open: len(q.reserved)}
}

// TryRecv returns the next envelope without waiting.
func (q *Inbox) TryRecv() (Envelope, bool) {
	q.mu.Lock()
	env, ok := q.popLocked()
	more := q.live > 0
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
		more := q.live > 0
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

// inUseLocked reports an id that is reserved, open as a stream, or has an
// undelivered call result or coalescing update.
func (q *Inbox) inUseLocked(id string) bool {
	if _, ok := q.reserved[id]; ok {
		return true
	}
	if _, ok := q.streams[id]; ok {
		return true
	}
	if _, ok := q.deltas[id]; ok {
		return true
	}
	_, ok := q.results[id]
	return ok
}

func (q *Inbox) signal() {
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

func (q *Inbox) pushLocked(e *entry) {
	q.queue = append(q.queue, e)
	q.live++
}

func (q *Inbox) dropLocked(e *entry) {
	switch {
	case e.kind == kindCall && q.results[e.env.ID] == e:
		delete(q.results, e.env.ID)
	case e.kind == kindDelta:
		if q.deltas[e.env.ID] == e {
			delete(q.deltas, e.env.ID)
		}
		q.deltaLive--
		e.buf = nil
	}
	e.dead = true
	e.env = Envelope{}
	q.live--
}

func (q *Inbox) popLocked() (Envelope, bool) {
	if q.finished {
		return Envelope{}, false
	}
	for q.head < len(q.queue) {
		e := q.queue[q.head]
		q.queue[q.head] = nil
		q.head++
		if e.dead {
			q.recycle(e)
			continue
		}
		q.live--
		switch e.kind {
		case kindCall:
			if q.results[e.env.ID] == e {
				delete(q.results, e.env.ID)
			}
		case kindUpdate:
			if p, ok := q.streams[e.env.ID]; ok && p == e {
				q.streams[e.env.ID] = nil
			}
		case kindDelta:
			if q.deltas[e.env.ID] == e {
				delete(q.deltas, e.env.ID)
			}
			q.deltaLive--
			if e.reply {
				e.env.Event = ReplyDelta{Text: string(e.buf)}
			} else {
				e.env.Event = ChatDelta{Text: string(e.buf)}
			}
		case kindShutdown:
			q.finished = true
		}
		q.delivered++
		env := e.env
		q.recycle(e)
		q.compactLocked()
		return env, true
	}
	q.compactLocked()
	return Envelope{}, false
}

// maxFree bounds the recycled entries an inbox keeps.
const maxFree = 64

func (q *Inbox) newEntry(id string, ev Event, kind entryKind) *entry {
	if n := len(q.free); n > 0 {
		e := q.free[n-1]
		q.free = q.free[:n-1]
		*e = entry{env: Envelope{ID: id, Event: ev}, kind: kind}
		return e
	}
	return &entry{env: Envelope{ID: id, Event: ev}, kind: kind}
}

// recycle keeps e, no longer referenced by the queue or an index, for reuse.
func (q *Inbox) recycle(e *entry) {
	if len(q.free) < maxFree {
		*e = entry{}
		q.free = append(q.free, e)
	}
}

func (q *Inbox) compactLocked() {
	switch {
	case q.head == len(q.queue):
		q.queue = q.queue[:0]
		q.head = 0
	case q.head >= compactAfter && q.head*2 >= len(q.queue):
		n := copy(q.queue, q.queue[q.head:])
		clear(q.queue[n:])
		q.queue = q.queue[:n]
		q.head = 0
	}
}
