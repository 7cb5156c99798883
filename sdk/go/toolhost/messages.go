package toolhost

import "runtime"

// AgentMessage is a message to this agent (WIT record agent-message), the
// payload of a MessageEvent; its envelope's ID is the id to reply to.
type AgentMessage struct {
	// Sender is who sent it: "api" (the control API, the CLI), "mcp",
	// "a2a", or "agent:NAME".
	Sender string `json:"sender"`
	// Session is the conversation it belongs to, as the sender named it;
	// nil: a one-off.
	Session *string `json:"session"`
	// Content is the message: text, or JSON as text.
	Content string `json:"content"`
}

// Messaging is the WIT interface messages: replying to the messages this
// agent receives (MessageEvent envelopes) and sending messages to other
// agents. Its one value is Messages.
//
// A message gets exactly one terminal reply (Reply or ReplyError), after
// any number of ReplyDelta; a reply for an id that is not a message to this
// agent, or after its terminal reply, is InvalidArgument, and Cancelled
// once its sender cancelled it.
type Messaging struct{}

// Messages is the messages interface: toolhost.Messages.Reply(id, "hi").
var Messages Messaging

// ReplyDelta streams more text of the reply to message id to its sender.
func (Messaging) ReplyDelta(id, text string) error {
	return unitCall("the reply's text", id, text, rawReplyDelta)
}

// Reply ends the reply to message id: the whole reply is the text of the
// deltas sent for it, in order, followed by content.
func (Messaging) Reply(id, content string) error {
	return unitCall("the reply", id, content, rawReply)
}

// ReplyError ends the reply to message id as a failure; its sender sees
// message.
func (Messaging) ReplyError(id, message string) error {
	return unitCall("the error message", id, message, rawReplyError)
}

// Send sends content to the agent to (in session, if not nil) and returns
// the message's id at once. Zero or more ReplyDeltaEvent envelopes with
// that id follow, then exactly one ReplyEvent or ErrorEvent, unless the
// message is cancelled first (Inbox.ReplyOf follows them). Denied: this
// agent may not message to; NotFound: no such agent; Unsupported: its
// component cannot receive messages; Busy: its inbox is full.
func (Messaging) Send(to, content string, session *string) (id string, err error) {
	for _, a := range [...]struct{ what, s string }{{"the agent name", to}, {"the message", content}} {
		if err := checkUTF8(a.what, a.s); err != nil {
			return "", err
		}
	}
	var some uint32
	var sess string
	if session != nil {
		if err := checkUTF8("the session", *session); err != nil {
			return "", err
		}
		some, sess = 1, *session
	}
	var herr error
	err = hostCall(func(ret uint32) {
		tp, tn := stringArg(to)
		cp, cn := stringArg(content)
		sp, sn := stringArg(sess)
		rawSend(tp, tn, cp, cn, some, sp, sn, ret)
		runtime.KeepAlive(to)
		runtime.KeepAlive(content)
		runtime.KeepAlive(sess)
	}, func(m memory, ret uint32) { id, herr = liftResult(m, ret, liftString) })
	if err != nil {
		return "", err
	}
	return id, herr
}

// IsOpen is true from Send until the message's terminal envelope is
// enqueued or it is cancelled; false for unknown ids.
func (Messaging) IsOpen(id string) bool { return idCall(id, rawMessageIsOpen) }

// Cancel is true if the message was open or an envelope of it undelivered;
// no envelope with that id is received after it returns true.
func (Messaging) Cancel(id string) bool { return idCall(id, rawMessageCancel) }

// unitCall calls an import (id, s) -> result<_, host-error>. An id that is
// not valid UTF-8 names no message (InvalidArgument, as the host says of
// an unknown id); an s that is not is InvalidArgument (what).
func unitCall(what, id, s string, raw func(ip, in, sp, sn, ret uint32)) error {
	if err := checkUTF8("the message id", id); err != nil {
		return err
	}
	if err := checkUTF8(what, s); err != nil {
		return err
	}
	var herr error
	err := hostCall(func(ret uint32) {
		ip, in := stringArg(id)
		sp, sn := stringArg(s)
		raw(ip, in, sp, sn, ret)
		runtime.KeepAlive(id)
		runtime.KeepAlive(s)
	}, func(m memory, ret uint32) { _, herr = liftResult(m, ret, liftUnit) })
	if err != nil {
		return err
	}
	return herr
}

// idCall calls an import (id) -> bool; false for an id that is not valid
// UTF-8 (it names nothing the host gave out).
func idCall(id string, raw func(p, n uint32) uint32) bool {
	if checkUTF8("", id) != nil {
		return false
	}
	lock()
	defer unlock()
	p, n := stringArg(id)
	b := raw(p, n)
	runtime.KeepAlive(id)
	return liftBool(b)
}

// liftUnit lifts the ok case of a result<_, E>, which has no payload.
func liftUnit(memory, uint32) struct{} { return struct{}{} }
