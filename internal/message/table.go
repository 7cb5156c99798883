package message

import (
	"container/list"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"sync"
	"time"
)

// Retention defaults (a Router's Options left at zero).
const (
	DefaultRetention   = 10 * time.Minute
	DefaultMaxMessages = 10000
	DefaultMaxBytes    = 64 << 20
)

// table keeps the accepted messages by id and by idempotency key: every
// open one, and the ended ones for the retention window, fewer when there
// are more than maxMessages or they hold more than maxBytes (the oldest
// ended first). It has no goroutine: it sweeps when used.
type table struct {
	retention   time.Duration
	maxMessages int
	maxBytes    int
	now         func() time.Time

	mu    sync.Mutex
	byID  map[string]*Message
	byKey map[idemKey]*Message
	ended *list.List // of *Message, in the order they ended
	endAt map[*Message]*list.Element
	bytes int // of the ended messages kept
}

type idemKey struct{ agent, key string }

func newTable(retention time.Duration, maxMessages, maxBytes int, now func() time.Time) *table {
	return &table{
		retention: retention, maxMessages: maxMessages, maxBytes: maxBytes, now: now,
		byID: map[string]*Message{}, byKey: map[idemKey]*Message{},
		ended: list.New(), endAt: map[*Message]*list.Element{},
	}
}

// add keeps m (and its key), unless the open messages alone fill the
// table: then ErrBusy.
func (t *table) add(m *Message) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweepLocked(1)
	if len(t.byID) >= t.maxMessages {
		return refuse(ErrBusy, tooling.CodeBusy, "%d messages are open or retained (at most %d): retry later", len(t.byID), t.maxMessages)
	}
	t.byID[m.id] = m
	if m.key != "" {
		t.byKey[idemKey{m.agent, m.key}] = m
	}
	m.onFinish(t.ended1)
	return nil
}

// ended1 moves m to the ended list.
func (t *table) ended1(m *Message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byID[m.id] != m {
		return // removed
	}
	t.endAt[m] = t.ended.PushBack(m)
	t.bytes += m.bytes()
	t.sweepLocked(0)
}

// remove forgets m (a message that could not be delivered).
func (t *table) remove(m *Message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forgetLocked(m)
}

func (t *table) forgetLocked(m *Message) {
	if t.byID[m.id] == m {
		delete(t.byID, m.id)
	}
	if k := (idemKey{m.agent, m.key}); m.key != "" && t.byKey[k] == m {
		delete(t.byKey, k)
	}
	if e, ok := t.endAt[m]; ok {
		t.ended.Remove(e)
		delete(t.endAt, m)
		t.bytes -= m.bytes()
	}
}

// get is the message id of agent, if kept.
func (t *table) get(agent, id string) (*Message, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweepLocked(0)
	m, ok := t.byID[id]
	if !ok || m.agent != agent {
		return nil, false
	}
	return m, true
}

// byIdempotencyKey is the message agent accepted with key, if kept.
func (t *table) byIdempotencyKey(agent, key string) (*Message, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweepLocked(0)
	m, ok := t.byKey[idemKey{agent, key}]
	return m, ok
}

// sweepLocked forgets ended messages past the retention, then the oldest
// ended ones while more than the bounds less room are kept.
func (t *table) sweepLocked(room int) {
	cutoff := t.now().Add(-t.retention)
	for e := t.ended.Front(); e != nil; e = t.ended.Front() {
		m := e.Value.(*Message)
		at, _ := m.finishedAt()
		over := len(t.byID)+room > t.maxMessages || t.bytes > t.maxBytes
		if !at.Before(cutoff) && !over {
			return
		}
		t.forgetLocked(m)
	}
}

// stats are the table's counts.
func (t *table) stats() (open, retained, bytes int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byID) - t.ended.Len(), t.ended.Len(), t.bytes
}
