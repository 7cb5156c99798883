package inbox

// Messages (toolhost:agent@0.3.0). A message to this agent is an envelope
// put without a reservation (Put), taking one unit of capacity until it is
// received; its sender's cancel turns it into an error envelope
// (CancelMessage). The reply to a message this agent sent is a reserved
// stream like a chat stream (ReserveReply; Delta for its reply-delta
// events, Deliver for its one reply or error envelope).

// Put enqueues ev (a Message) under id, taking one unit of capacity until
// it is received. ErrFull when the capacity is reached, ErrShutdown after
// Shutdown, ErrDuplicate when id is in use.
func (q *Inbox) Put(id string, ev Event) error {
	q.mu.Lock()
	switch {
	case q.shutdown:
		q.mu.Unlock()
		return ErrShutdown
	case q.usedLocked() >= q.capacity:
		q.mu.Unlock()
		return ErrFull
	case q.ids.inUse(id):
		q.mu.Unlock()
		return ErrDuplicate
	}
	e := q.queue.newEntry(id, ev, kindCall)
	q.ids.results[id] = e
	q.queue.push(e)
	q.mu.Unlock()
	q.signal()
	return nil
}

// CancelMessage tells the agent that the message id was cancelled: while
// the message's envelope is undelivered ev replaces it in place, else ev is
// enqueued under id (past the capacity: it answers an envelope already
// counted). It returns false after Shutdown.
func (q *Inbox) CancelMessage(id string, ev Event) bool {
	q.mu.Lock()
	if q.shutdown {
		q.mu.Unlock()
		return false
	}
	if e, ok := q.ids.results[id]; ok {
		e.env.Event = ev
		q.mu.Unlock()
		return true
	}
	q.queue.push(q.queue.newEntry(id, ev, kindOther))
	q.mu.Unlock()
	q.signal()
	return true
}

// ReserveReply reserves id for the reply to a message this agent sent,
// like ReserveChat: Delta adds its text (delivered as ReplyDelta events,
// merged while undelivered), Deliver puts its one Reply or Error envelope.
func (q *Inbox) ReserveReply(id string) error {
	if err := q.ReserveChat(id); err != nil {
		return err
	}
	q.mu.Lock()
	if _, ok := q.ids.chats[id]; ok {
		q.ids.replies[id] = struct{}{}
	}
	q.mu.Unlock()
	return nil
}

// ReservedReply is Reserved for the reply to a message this agent sent
// (the contract's messages is-open).
func (q *Inbox) ReservedReply(id string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.ids.reserved[id]
	_, reply := q.ids.replies[id]
	return ok && reply
}
