package toolhost

import "time"

// Inbox receives envelopes for an agent that waits for one id at a time:
// WaitFor returns the next envelope with that id and holds those for
// other ids, in arrival order, for the next Recv or WaitFor. The shutdown
// envelope ends every wait: it is returned, and Shutdown is true from then
// on. The zero Inbox is ready to use; an agent has one (more would hold
// envelopes from each other).
//
// On top of it: Serve answers messages, StreamChat follows a chat-stream,
// ReplyOf follows the reply to a sent message.
type Inbox struct {
	held     []Envelope
	shutdown bool
	// recv and msgs are Recv and Messages; the tests' own otherwise.
	recv func(time.Duration) (Envelope, bool)
	msgs replies
}

// replies is what a Replier calls: Messages, or the tests' own.
type replies interface {
	ReplyDelta(id, text string) error
	Reply(id, content string) error
	ReplyError(id, message string) error
}

// Shutdown reports whether the shutdown envelope was received.
func (in *Inbox) Shutdown() bool { return in.shutdown }

// Held is how many received envelopes wait for a later Recv or WaitFor.
func (in *Inbox) Held() int { return len(in.held) }

func (in *Inbox) take(timeout time.Duration) (Envelope, bool) {
	recv := in.recv
	if recv == nil {
		recv = Recv
	}
	env, ok := recv(timeout)
	if _, shut := env.Event.(ShutdownEvent); ok && shut {
		in.shutdown = true
	}
	return env, ok
}

// Recv is the next envelope, held ones first, waiting up to timeout as
// Recv does; ok is false when none came in time.
func (in *Inbox) Recv(timeout time.Duration) (env Envelope, ok bool) {
	if len(in.held) > 0 {
		env, in.held = in.held[0], in.held[1:]
		return env, true
	}
	return in.take(timeout)
}

// WaitFor is the next envelope with id, or the shutdown envelope, waiting
// up to timeout in all (Forever: until one arrives); ok is false when none
// came in time. Envelopes for other ids are held.
func (in *Inbox) WaitFor(id string, timeout time.Duration) (Envelope, bool) {
	for i, env := range in.held {
		if _, shut := env.Event.(ShutdownEvent); env.ID == id || shut {
			in.held = append(in.held[:i:i], in.held[i+1:]...)
			return env, true
		}
	}
	left := budget(timeout)
	for {
		env, ok := in.take(left())
		if !ok {
			return env, false
		}
		if _, shut := env.Event.(ShutdownEvent); env.ID == id || shut {
			return env, true
		}
		in.held = append(in.held, env)
	}
}

// budget returns what is left of timeout from now on, each time it is
// called (Forever stays Forever; what has run out is 0).
func budget(timeout time.Duration) func() time.Duration {
	if timeout == Forever {
		return func() time.Duration { return Forever }
	}
	end := time.Now().Add(timeout)
	return func() time.Duration { return max(time.Until(end), 0) }
}

// follow waits for the envelopes of id until its terminal one: delta is
// called with the text of each delta envelope (its error stops the wait),
// and the terminal one returned. An ErrorEvent is its *HostError, the
// shutdown envelope ErrShutdown, no envelope within timeout (in all) a
// Timeout *HostError.
func (in *Inbox) follow(id string, timeout time.Duration, delta func(Event) (string, bool), onDelta func(string) error) (Event, error) {
	left := budget(timeout)
	for {
		env, ok := in.WaitFor(id, left())
		switch {
		case !ok && in.shutdown:
			return nil, ErrShutdown
		case !ok:
			return nil, &HostError{Code: Timeout, Message: "toolhost: nothing of " + id + " arrived in time"}
		}
		if text, isDelta := delta(env.Event); isDelta {
			if onDelta != nil {
				if err := onDelta(text); err != nil {
					return nil, err
				}
			}
			continue
		}
		switch ev := env.Event.(type) {
		case ShutdownEvent:
			return nil, ErrShutdown
		case ErrorEvent:
			return nil, ev.Err
		}
		return env.Event, nil
	}
}

// StreamChat follows the chat-stream id (Provider.ChatStream): onDelta
// (if not nil) gets the text of each ChatDeltaEvent as it arrives, and the
// ChatDoneEvent's response is returned. An ErrorEvent is returned as its
// *HostError, the shutdown envelope as ErrShutdown, nothing within timeout
// (the whole stream's) as a Timeout *HostError; an error of onDelta stops
// the wait and is returned (the stream stays open: Cancel it). Envelopes
// of other ids are held.
func (in *Inbox) StreamChat(id string, timeout time.Duration, onDelta func(text string) error) (*ChatResponse, error) {
	ev, err := in.follow(id, timeout, func(ev Event) (string, bool) {
		d, ok := ev.(ChatDeltaEvent)
		return d.Text, ok
	}, onDelta)
	if err != nil {
		return nil, err
	}
	done, ok := ev.(ChatDoneEvent)
	if !ok {
		return nil, &HostError{Code: Protocol, Message: "toolhost: a " + ev.Tag() + " envelope in chat-stream " + id}
	}
	return &done.Response, nil
}

// ReplyOf follows the reply to the message id (Messages.Send): onDelta (if
// not nil) gets the text of each ReplyDeltaEvent as it arrives, and the
// whole reply (the deltas' text followed by the ReplyEvent's) is
// returned. Errors as for StreamChat: an ErrorEvent (the other agent's
// ReplyError, or a failure to deliver) is its *HostError.
func (in *Inbox) ReplyOf(id string, timeout time.Duration, onDelta func(text string) error) (string, error) {
	var whole []byte
	ev, err := in.follow(id, timeout, func(ev Event) (string, bool) {
		d, ok := ev.(ReplyDeltaEvent)
		if ok {
			whole = append(whole, d.Text...)
		}
		return d.Text, ok
	}, onDelta)
	if err != nil {
		return "", err
	}
	r, ok := ev.(ReplyEvent)
	if !ok {
		return "", &HostError{Code: Protocol, Message: "toolhost: a " + ev.Tag() + " envelope in the reply to " + id}
	}
	return string(whole) + r.Content, nil
}

// Incoming is a message to this agent as Serve hands it over: its id (the
// envelope's, which the reply goes back under) and the message.
type Incoming struct {
	ID string
	AgentMessage
}

// A Replier writes the reply to one message: any number of Delta, then
// one End or Fail. Its methods return the host's error (Cancelled once the
// sender cancelled the message, InvalidArgument after the reply ended).
type Replier struct {
	id    string
	inbox *Inbox
	done  bool
}

// ID is the message's id.
func (r *Replier) ID() string { return r.id }

// Done reports whether End or Fail was called.
func (r *Replier) Done() bool { return r.done }

func (r *Replier) msgs() replies {
	if r.inbox.msgs != nil {
		return r.inbox.msgs
	}
	return Messages
}

// Delta streams more text of the reply.
func (r *Replier) Delta(text string) error { return r.msgs().ReplyDelta(r.id, text) }

// End ends the reply: the whole reply is the deltas' text followed by
// content.
func (r *Replier) End(content string) error {
	r.done = true
	return r.msgs().Reply(r.id, content)
}

// Fail ends the reply as a failure; the sender sees message.
func (r *Replier) Fail(message string) error {
	r.done = true
	return r.msgs().ReplyError(r.id, sanitize(message))
}

// StreamChat streams the model's answer into the reply as it arrives: it
// starts p.ChatStream(req) and sends each chat delta's text as a Delta,
// returning the whole response (whose text the sender has then seen). It
// does not end the reply: a response that asks for tool calls is followed
// by another turn, whose text streams into the same reply. When a Delta
// fails (the sender cancelled) the stream is cancelled and the error
// returned.
func (r *Replier) StreamChat(p *Provider, req *ChatRequest) (*ChatResponse, error) {
	id, err := p.ChatStream(req)
	if err != nil {
		return nil, err
	}
	resp, err := r.inbox.StreamChat(id, Forever, r.Delta)
	if err != nil {
		p.Cancel(id)
	}
	return resp, err
}

// Serve answers messages until the shutdown envelope arrives (then it
// returns nil): for each MessageEvent it calls h with the message and a
// Replier for it. A reply h did not end is ended when h returns: with
// End("") after nil, with Fail(err.Error()) after an error (a failure to
// end it, such as a message its sender cancelled, is not Serve's: it goes
// on). Envelopes of other kinds that h did not wait for are dropped. h
// may use the Replier's StreamChat and the Inbox's waits: messages that
// arrive meanwhile are held and served next, in order, unless the
// shutdown envelope arrived during h: then they are failed with "the agent
// is stopping" and Serve returns.
func (in *Inbox) Serve(h func(msg Incoming, r *Replier) error) error {
	for {
		env, ok := in.Recv(Forever)
		if !ok {
			return nil // waiting forever ends only after the shutdown envelope
		}
		switch ev := env.Event.(type) {
		case ShutdownEvent:
			return nil
		case MessageEvent:
			r := &Replier{id: env.ID, inbox: in}
			err := h(Incoming{ID: env.ID, AgentMessage: ev.Message}, r)
			switch {
			case r.done:
			case err != nil:
				_ = r.Fail(err.Error())
			default:
				_ = r.End("")
			}
			if in.shutdown {
				in.failHeld("the agent is stopping")
				return nil
			}
		}
	}
}

// failHeld fails the held messages with message and drops every held
// envelope.
func (in *Inbox) failHeld(message string) {
	for _, env := range in.held {
		if _, ok := env.Event.(MessageEvent); ok {
			r := &Replier{id: env.ID, inbox: in}
			_ = r.Fail(message)
		}
	}
	in.held = nil
}

// Serve answers messages with h until shutdown, on an Inbox of its own:
// see Inbox.Serve. It is the whole of an agent that only answers
// messages:
//
//	toolhost.Run(func(string) (string, error) {
//		return "", toolhost.Serve(func(m toolhost.Incoming, r *toolhost.Replier) error {
//			return r.End("you said: " + m.Content)
//		})
//	})
func Serve(h func(msg Incoming, r *Replier) error) error {
	var in Inbox
	return in.Serve(h)
}
