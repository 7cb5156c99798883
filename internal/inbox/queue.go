package inbox

// compactAfter is the number of consumed slots at the front of the queue
// after which the queue is compacted when they are at least half of it.
const compactAfter = 256

// maxFree bounds the recycled entries an inbox keeps.
const maxFree = 64

// entryKind is what an entry of the queue holds.
type entryKind uint8

const (
	kindCall     entryKind = iota // the result of a reserved call
	kindUpdate                    // a coalescing update of an open stream
	kindOther                     // a stream's final event
	kindShutdown                  // the shutdown envelope
	kindDelta                     // the merged undelivered text of a chat stream
)

// entry is one envelope of the queue, with what delivery needs of it.
type entry struct {
	env   Envelope
	kind  entryKind
	dead  bool   // dropped by Cancel or CloseStream; skipped by popLocked
	buf   []byte // kindDelta: the merged text, lifted into a ChatDelta (or ReplyDelta) at delivery
	chat  bool   // kindCall: the terminal envelope of a chat stream (or a reply)
	reply bool   // kindDelta: of a reply stream, lifted into a ReplyDelta
}

// queue is an inbox's envelopes in arrival order, with the entries it
// recycles. Inbox.mu guards it.
type queue struct {
	items     []*entry // items[head:] are undelivered (some dead)
	head      int
	live      int      // undelivered, not dead
	deltaLive int      // undelivered deltas (not counted against the capacity)
	free      []*entry // recycled entries
}

// push appends e, undelivered.
func (qu *queue) push(e *entry) {
	qu.items = append(qu.items, e)
	qu.live++
}

// newEntry is an entry for ev under id, recycled if one is free.
func (qu *queue) newEntry(id string, ev Event, kind entryKind) *entry {
	if n := len(qu.free); n > 0 {
		e := qu.free[n-1]
		qu.free = qu.free[:n-1]
		*e = entry{env: Envelope{ID: id, Event: ev}, kind: kind}
		return e
	}
	return &entry{env: Envelope{ID: id, Event: ev}, kind: kind}
}

// recycle keeps e, no longer referenced by the queue or an index, for reuse.
func (qu *queue) recycle(e *entry) {
	if len(qu.free) < maxFree {
		*e = entry{}
		qu.free = append(qu.free, e)
	}
}

// compact drops the consumed slots at the front when the queue is empty
// or they are many.
func (qu *queue) compact() {
	switch {
	case qu.head == len(qu.items):
		qu.items = qu.items[:0]
		qu.head = 0
	case qu.head >= compactAfter && qu.head*2 >= len(qu.items):
		n := copy(qu.items, qu.items[qu.head:])
		clear(qu.items[n:])
		qu.items = qu.items[:n]
		qu.head = 0
	}
}

// index is what an inbox knows of each id that is open or has an
// undelivered envelope. Inbox.mu guards it.
type index struct {
	results  map[string]*entry   // undelivered call results
	reserved map[string]struct{} // open calls
	streams  map[string]*entry   // open subscriptions: their undelivered update or nil
	chats    map[string]bool     // reserved calls that are chat streams: true once a delta came
	deltas   map[string]*entry   // undelivered delta of a chat stream
	replies  map[string]struct{} // the chats that are replies to a message sent (message.go)
}

// inUse reports an id that is reserved, open as a stream, or has an
// undelivered call result or chat delta.
func (x *index) inUse(id string) bool {
	if _, ok := x.reserved[id]; ok {
		return true
	}
	if _, ok := x.streams[id]; ok {
		return true
	}
	if _, ok := x.deltas[id]; ok {
		return true
	}
	_, ok := x.results[id]
	return ok
}

// counters are an inbox's running totals (Stats). Inbox.mu guards them.
type counters struct {
	coalesced uint64 // updates replaced in place
	merged    uint64 // chat deltas appended to an undelivered one
	delivered uint64 // envelopes received
}
