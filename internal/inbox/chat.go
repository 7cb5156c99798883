package inbox

import "runtime"

// ReserveChat reserves the chat stream id like Reserve (one unit of
// capacity, for its terminal envelope, which Deliver puts) and lets Delta
// add text to it until then. Its deltas take no capacity: the undelivered
// text of the stream is one entry that later deltas extend.
func (q *Inbox) ReserveChat(id string) error {
	if err := q.Reserve(id); err != nil {
		return err
	}
	q.mu.Lock()
	if _, ok := q.ids.reserved[id]; ok { // not cancelled or shut down meanwhile
		q.ids.chats[id] = false
	}
	q.mu.Unlock()
	return nil
}

// Delta delivers more text of the open chat stream id: appended to its
// undelivered delta if it has one (counted in Merged), else enqueued as a
// new ChatDelta envelope. Text is never dropped while the stream is open,
// so the received deltas concatenate to everything sent. It returns false,
// dropping text, when id is not an open chat stream (cancelled, ended by
// Deliver, or shut down).
func (q *Inbox) Delta(id, text string) bool {
	q.mu.Lock()
	started, ok := q.ids.chats[id]
	if !ok {
		q.mu.Unlock()
		return false
	}
	q.ids.chats[id] = true
	if e := q.ids.deltas[id]; e != nil {
		e.buf = append(e.buf, text...)
		q.counts.merged++
		q.mu.Unlock()
		return true
	}
	e := q.queue.newEntry(id, nil, kindDelta)
	e.buf = append(e.buf, text...)
	_, e.reply = q.ids.replies[id]
	q.ids.deltas[id] = e
	q.queue.deltaLive++
	q.queue.push(e)
	q.mu.Unlock()
	q.signal()
	if !started {
		// The first token: the stream's reader would go on reading while
		// the agent it just woke waits for a P (a woken goroutine runs
		// when its waker blocks), which on two cores kept the first delta
		// from the agent for about 0.7 ms. Later deltas merge meanwhile.
		runtime.Gosched()
	}
	return true
}

// IsChat reports whether id is a chat stream's: reserved by ReserveChat,
// or with an undelivered delta or terminal envelope.
func (q *Inbox) IsChat(id string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.ids.chats[id]; ok {
		return true
	}
	if _, ok := q.ids.deltas[id]; ok {
		return true
	}
	e, ok := q.ids.results[id]
	return ok && e.chat
}

// ReservedCall is Reserved for a call that is not a chat stream (the
// contract's tooling is-open).
func (q *Inbox) ReservedCall(id string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.ids.reserved[id]
	_, chat := q.ids.chats[id]
	return ok && !chat
}
