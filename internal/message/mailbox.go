package message

import (
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// keepCancelled is how many ids of cancelled messages a mailbox remembers,
// so that a late reply to one is told cancelled rather than not open.
const keepCancelled = 256

// Mailbox is one instance's side of the messages to it: Put brings a
// message into the instance's inbox, the guest's reply-delta, reply and
// reply-error go through Delta, Reply and Fail, and Close fails whatever
// the instance leaves unanswered. Its methods are safe for concurrent use.
type Mailbox struct {
	in      *inbox.Inbox
	now     func() time.Time
	journal Journal // nil: not durable

	mu        sync.Mutex
	open      map[string]*Message
	cancelled []string // the last keepCancelled ids, oldest first
	closed    bool
	handled   uint64
	last      time.Time // the last message put or answered
	current   *Message  // the last one the guest received (Took)
}

// NewMailbox is the mailbox of the instance whose inbox is in.
func NewMailbox(in *inbox.Inbox, now func() time.Time) *Mailbox {
	if now == nil {
		now = time.Now
	}
	return &Mailbox{in: in, now: now, open: map[string]*Message{}, last: now()}
}

// Journal keeps a durable instance's messages (the host's oplog): a
// message is Accepted, durably, before it is enqueued, and Ended when its
// reply ends, so that after a crash its reply can still be made.
type Journal interface {
	Accepted(m *Message) error
	Ended(id string)
}

// NewJournaledMailbox is NewMailbox for a durable instance: its messages
// go through j.
func NewJournaledMailbox(in *inbox.Inbox, now func() time.Time, j Journal) *Mailbox {
	b := NewMailbox(in, now)
	b.journal = j
	return b
}

// Put enqueues m as a message envelope. ErrBusy when the inbox is full,
// ErrUnavailable once the instance is closing; with a Journal, an
// unavailable error when it could not record m.
func (b *Mailbox) Put(m *Message) error {
	if err := b.put(m, true); err != nil {
		return err
	}
	b.opened(m)
	return nil
}

// Resume opens m again in a durable instance that took over from one that
// was cut off (its Journal recorded m accepted and not ended), enqueueing
// its envelope only when enqueue says the guest had not received it.
func (b *Mailbox) Resume(m *Message, enqueue bool) error {
	var err error
	if enqueue {
		err = b.put(m, false)
	} else {
		b.mu.Lock()
		b.open[m.id] = m
		b.mu.Unlock()
	}
	if err != nil {
		return err
	}
	b.opened(m)
	return nil
}

// opened hooks an open message's cancel and, with a journal, its end.
func (b *Mailbox) opened(m *Message) {
	m.setOnCancel(func() { b.cancelled1(m) })
	if j := b.journal; j != nil {
		m.onFinish(func(m *Message) { j.Ended(m.id) })
	}
}

// put enqueues m and opens it; the lock is held across both so that a
// reply to m (find) waits for it to be open. record: the journal records
// it first.
func (b *Mailbox) put(m *Message, record bool) (err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return refuse(ErrUnavailable, tooling.CodeUnavailable, "the instance of agent %q is stopping", m.agent)
	}
	if j := b.journal; j != nil && record {
		if err := j.Accepted(m); err != nil {
			return refuse(ErrUnavailable, tooling.CodeUnavailable, "the message could not be recorded in the oplog of agent %q: %v", m.agent, err)
		}
		defer func() {
			if err != nil {
				j.Ended(m.id) // refused after all
			}
		}()
	}
	var session *string
	if m.session != "" {
		s := m.session
		session = &s
	}
	switch err := b.in.Put(m.id, inbox.Message{Sender: m.sender, Session: session, Content: m.content}); {
	case errors.Is(err, inbox.ErrFull):
		return refuse(ErrBusy, tooling.CodeBusy, "the inbox of agent %q is full (%d): retry later", m.agent, b.in.Capacity())
	case errors.Is(err, inbox.ErrShutdown):
		return refuse(ErrUnavailable, tooling.CodeUnavailable, "the instance of agent %q is stopping", m.agent)
	case err != nil:
		return tooling.Errorf(tooling.CodeInternal, "message %s: %v", m.id, err)
	}
	b.open[m.id] = m
	b.last = b.now()
	return nil
}

// Took notes that the guest received the envelope of message id: while
// it is open, it is the message the instance works on (Current).
func (b *Mailbox) Took(id string) {
	b.mu.Lock()
	if m, ok := b.open[id]; ok {
		b.current = m
	}
	b.mu.Unlock()
}

// AddEvent adds an event to the span of the message the instance works
// on, while it is open and traced (a durable instance's replayed call).
func (b *Mailbox) AddEvent(name string, attrs ...attribute.KeyValue) {
	b.mu.Lock()
	m := b.current
	if m == nil || b.open[m.id] != m {
		m = nil
	}
	b.mu.Unlock()
	if m != nil && m.span != nil && m.span.IsRecording() {
		m.span.AddEvent(name, trace.WithAttributes(attrs...))
	}
}

// Current is the span context of the message the instance works on: the
// last one it received, while it is open; invalid when none is.
func (b *Mailbox) Current() trace.SpanContext {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := b.current
	if m == nil || b.open[m.id] != m {
		return trace.SpanContext{}
	}
	return m.SpanContext()
}

// cancelled1 moves a cancelled message out of the open ones and tells the
// instance with an error envelope under its id.
func (b *Mailbox) cancelled1(m *Message) {
	b.mu.Lock()
	if b.open[m.id] == m {
		delete(b.open, m.id)
		if len(b.cancelled) == keepCancelled {
			b.cancelled = b.cancelled[1:]
		}
		b.cancelled = append(b.cancelled, m.id)
	}
	b.mu.Unlock()
	b.in.CancelMessage(m.id, inbox.Error{Err: tooling.Error{Code: tooling.CodeCancelled, Message: "the sender cancelled message " + m.id}})
}

// Delta is the guest's reply-delta.
func (b *Mailbox) Delta(id, text string) error {
	m, err := b.find(id)
	if err != nil {
		return err
	}
	return m.Delta(text)
}

// Reply is the guest's reply.
func (b *Mailbox) Reply(id, content string) error {
	return b.end(id, func(m *Message) error { return m.Reply(content) })
}

// Fail is the guest's reply-error.
func (b *Mailbox) Fail(id, text string) error {
	return b.end(id, func(m *Message) error { return m.Fail(CodeReplyError, text) })
}

// end runs a terminal reply f on the open message id and counts it
// answered, under the lock: once the sender sees the reply, the count
// (ps) has it too.
func (b *Mailbox) end(id string, f func(*Message) error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, err := b.findLocked(id)
	if err != nil {
		return err
	}
	if err := f(m); err != nil {
		return err
	}
	delete(b.open, id)
	b.handled++
	b.last = b.now()
	return nil
}

func (b *Mailbox) find(id string) (*Message, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.findLocked(id)
}

func (b *Mailbox) findLocked(id string) (*Message, error) {
	if m, ok := b.open[id]; ok {
		return m, nil
	}
	for _, c := range b.cancelled {
		if c == id {
			return nil, refuse(ErrCancelled, tooling.CodeCancelled, "message %s was cancelled by its sender", id)
		}
	}
	return nil, refuse(ErrNotOpen, tooling.CodeInvalidArgument, "%s is not an open message to this agent", id)
}

// Open counts the messages put and not yet answered.
func (b *Mailbox) Open() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.open)
}

// Handled counts the messages answered (replied or failed by the guest).
func (b *Mailbox) Handled() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.handled
}

// LastActivity is when a message was last put or answered.
func (b *Mailbox) LastActivity() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last
}

// Leave refuses further messages and leaves the open ones open: a durable
// instance suspended by its host's shutdown, whose oplog has them, so that
// the host's next start resumes them (Router.Resume) and their replies are
// still made.
func (b *Mailbox) Leave() {
	b.mu.Lock()
	b.closed = true
	b.open = map[string]*Message{}
	b.mu.Unlock()
}

// Close refuses further messages and fails every open one with code and
// text (the instance ended: unavailable, with the trap's summary).
func (b *Mailbox) Close(code tooling.ErrorCode, text string) {
	b.mu.Lock()
	b.closed = true
	open := b.open
	b.open = map[string]*Message{}
	b.mu.Unlock()
	for _, m := range open {
		_ = m.Fail(code.String(), text)
	}
}
