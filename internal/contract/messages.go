package contract

// The agent's side of toolhost:agent@0.3.0's messages interface: the
// messages it receives (its Mailbox: reply-delta, reply and reply-error
// check the id against it) and those it sends (its Outbox: each reply
// streams back into its inbox under the message's id), both on package
// message's one path.

import (
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// Messaging is how an agent takes part in messages.
type Messaging struct {
	// Router delivers what the agent sends; nil: send is not-found (no
	// other agent is reachable).
	Router *message.Router
	// SendsTo reports whether the agent may send to an agent (its
	// sends_to); nil: to none.
	SendsTo func(agent string) bool
	// AuditContent writes the text of what it sends into the audit log.
	AuditContent bool
}

// Mailbox is the agent's side of the messages delivered to it.
func (a *Agent) Mailbox() *message.Mailbox { return a.mail.box }

// ReplyDelta streams more text of the reply to message id.
func (a *Agent) ReplyDelta(id, text string) error { return a.mail.box.Delta(id, text) }

// Reply ends the reply to message id.
func (a *Agent) Reply(id, content string) error { return a.mail.box.Reply(id, content) }

// ReplyError ends the reply to message id as a failure.
func (a *Agent) ReplyError(id, text string) error { return a.mail.box.Fail(id, text) }

// Send sends content to the agent to (in session, if not nil) and returns
// the message's id; its reply comes as reply-delta, reply or error
// envelopes under that id.
func (a *Agent) Send(to, content string, session *string) (string, error) {
	if a.mail.out == nil {
		return "", tooling.Errorf(tooling.CodeNotFound, "no agent %q: this host runs no other agent", to)
	}
	s := ""
	if session != nil {
		s = *session
	}
	allowed := a.mail.send.SendsTo != nil && a.mail.send.SendsTo(to)
	return a.mail.out.Send(a.messageContext(a.life.ctx), to, content, s, allowed, a.mail.send.AuditContent)
}

// MessageIsOpen is the messages interface's is-open.
func (a *Agent) MessageIsOpen(id string) bool { return a.mail.out != nil && a.mail.out.IsOpen(id) }

// CancelMessage is the messages interface's cancel.
func (a *Agent) CancelMessage(id string) bool { return a.mail.out != nil && a.mail.out.Cancel(id) }

// Busy reports open work: a message delivered and not answered, a call,
// chat stream or send open, or an envelope undelivered.
func (a *Agent) Busy() bool {
	st := a.in.Stats()
	return a.mail.box.Open() > 0 || st.Open > 0 || st.Pending > 0
}

// closeMessages fails the messages still open to the agent with text and
// cancels those it sent (agent exit).
func (a *Agent) closeMessages(text string) {
	if a.mail.leave.Load() {
		a.mail.box.Leave()
	} else {
		a.mail.box.Close(tooling.CodeUnavailable, text)
	}
	if a.mail.out != nil {
		a.mail.out.Close()
	}
}

// LeaveMessages makes the agent's close leave the messages open to it
// open instead of failing them (Mailbox.Leave): a durable instance
// suspended by its host's shutdown, whose next start resumes them.
func (a *Agent) LeaveMessages() { a.mail.leave.Store(true) }
