package message

import (
	"context"
	"errors"
	"sync"

	"github.com/google/uuid"

	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// Outbox is one instance's side of the messages it sends (the guest's
// send, is-open and cancel): each reply streams into the instance's inbox
// under the message's id, as reply-delta envelopes (merged while
// undelivered) then one reply or error envelope. Close cancels what is
// still open (the instance ended). Its methods are safe for concurrent use.
type Outbox struct {
	r      *Router
	in     *inbox.Inbox
	sender string // "agent:NAME"

	mu     sync.Mutex
	open   map[string]*Message
	closed bool
}

// NewOutbox is the outbox of the instance of agent whose inbox is in.
func NewOutbox(r *Router, agent string, in *inbox.Inbox) *Outbox {
	return &Outbox{r: r, in: in, sender: SenderAgentPrefix + agent, open: map[string]*Message{}}
}

// Send sends content to the agent to (in session) and returns the
// message's id; allowed says whether this agent may send to it (its
// sends_to), checked before anything is delivered. audit writes the
// content into the audit log.
func (o *Outbox) Send(ctx context.Context, to, content, session string, allowed bool, audit bool) (string, error) {
	if !allowed {
		return "", refuse(ErrDenied, tooling.CodeDenied, "%s may not send to agent %q: its sends_to has no match", o.sender, to)
	}
	id := uuid.NewString()
	err := o.in.ReserveReply(id)
	switch {
	case errors.Is(err, inbox.ErrFull):
		return "", refuse(ErrBusy, tooling.CodeBusy, "this agent's inbox is full (%d open calls and envelopes)", o.in.Capacity())
	case err != nil:
		return "", tooling.Errorf(tooling.CodeUnavailable, "send: %v", err)
	}
	m, _, err := o.r.Send(ctx, Request{ID: id, Agent: to, Session: session, Sender: o.sender, Content: content, Audit: audit})
	if err != nil {
		o.in.Cancel(id)
		return "", err
	}
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		o.in.Cancel(id)
		m.Cancel()
		return "", tooling.Errorf(tooling.CodeCancelled, "the agent is stopping")
	}
	o.open[id] = m
	o.mu.Unlock()
	m.Subscribe(func(ev Event) { o.forward(id, ev) })
	return id, nil
}

// forward puts one reply event into the inbox (it runs with the message
// locked, in order).
func (o *Outbox) forward(id string, ev Event) {
	switch ev.Kind {
	case KindDelta:
		o.in.Delta(id, ev.Text)
		return
	case KindReply:
		o.in.Deliver(id, inbox.Reply{Text: ev.Text})
	default:
		o.in.Deliver(id, inbox.Error{Err: *ErrorOf(ev)})
	}
	o.mu.Lock()
	delete(o.open, id)
	o.mu.Unlock()
}

// ErrorOf is an error event as the contract's host-error: its code when it
// is one of the contract's, internal for the agent's own reply-error (the
// message says what the agent said).
func ErrorOf(ev Event) *tooling.Error {
	if c, ok := tooling.ParseErrorCode(ev.Code); ok {
		return &tooling.Error{Code: c, Message: ev.Text}
	}
	return &tooling.Error{Code: tooling.CodeInternal, Message: ev.Text}
}

// IsOpen is the guest's messages is-open.
func (o *Outbox) IsOpen(id string) bool { return o.in.ReservedReply(id) }

// Cancel is the guest's messages cancel: the message is cancelled (its
// handler gets a cancelled error envelope) and nothing more of its reply
// is received.
func (o *Outbox) Cancel(id string) bool {
	o.mu.Lock()
	m := o.open[id]
	delete(o.open, id)
	o.mu.Unlock()
	ok := o.in.Cancel(id)
	if m != nil {
		m.Cancel()
	}
	return ok
}

// Open counts the messages sent whose reply has not ended.
func (o *Outbox) Open() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.open)
}

// Close cancels every open message (the instance ended).
func (o *Outbox) Close() {
	o.mu.Lock()
	o.closed = true
	open := o.open
	o.open = map[string]*Message{}
	o.mu.Unlock()
	for id, m := range open {
		o.in.Cancel(id)
		m.Cancel()
	}
}
