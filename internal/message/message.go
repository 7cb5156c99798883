// Package message is the one path of every message to an agent, whoever
// sends it (the control API and CLI, another agent's send, the MCP and A2A
// endpoints): a Router accepts it (size, sender, idempotency, retention),
// hands it to the instance that serves its agent and session, and keeps
// its reply as a stream of events (deltas, then exactly one reply or error)
// that any number of readers follow, resume by event number, or wait on.
//
// The guest's side is a Mailbox per instance (reply-delta, reply and
// reply-error check the id against it; an instance that ends fails what it
// had open). Nothing here knows about WebAssembly, HTTP or a cluster: the
// daemon implements Agents (which instance, started how), the control API
// and the protocol endpoints are adapters over Router.
package message

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/toolhostd/toolhostd/internal/tooling"
)

// Senders, as the agent-message's sender field names them.
const (
	SenderAPI = "api"
	SenderMCP = "mcp"
	SenderA2A = "a2a"
	// SenderAgentPrefix is followed by the sending agent's name.
	SenderAgentPrefix = "agent:"
)

// Event kinds of a reply.
const (
	KindDelta = "delta"
	KindReply = "reply"
	KindError = "error"
)

// CodeReplyError is an error event's code when the agent itself ended the
// reply with reply-error; every other error event carries one of the
// contract's error codes (unavailable for an instance that ended, cancelled
// for a cancelled message, ...).
const CodeReplyError = "reply-error"

// Event is one event of a reply. Seq numbers a message's events from 1.
type Event struct {
	Seq  uint64 `json:"seq"`
	Kind string `json:"kind"`
	// Text is a delta's text, the reply's whole text, or the error's
	// message.
	Text string `json:"text"`
	// Code is an error's code.
	Code string `json:"code,omitempty"`
}

// Terminal reports a reply or error event.
func (e Event) Terminal() bool { return e.Kind != KindDelta }

// Status is where a message is.
type Status string

// Statuses.
const (
	StatusQueued    Status = "queued"    // accepted, its instance not yet given it
	StatusWorking   Status = "working"   // in its instance's inbox or being answered
	StatusDone      Status = "done"      // replied
	StatusFailed    Status = "failed"    // reply-error, or its instance ended
	StatusCancelled Status = "cancelled" // cancelled by its sender
)

// Message is one accepted message and its reply. Its methods are safe for
// concurrent use.
type Message struct {
	header
	maxReply int
	now      func() time.Time
	span     trace.Span // nil: not traced (a replayed outcome)

	mu sync.Mutex // guards replyState, hooks and the replacing of signals.changed
	replyState
	hooks
	signals
}

// header is what a message is, fixed once it is accepted: its id, who it
// is for and from, its key and its content.
type header struct {
	id, agent, session, sender, key string
	content                         string
	audit                           bool // the sender asked for content in the audit log
	sha                             string
	accepted                        time.Time
}

// replyState is where a message's reply is: its status, its events and
// the deltas' text, and its timing.
type replyState struct {
	status     Status
	events     []Event
	deltas     []byte // the deltas' text so far: the reply's prefix
	size       int    // content plus every event's text
	firstDelta time.Duration
	hasFirst   bool
	finished   time.Time
	// ending is the status the reply is ending with, set as it ends and
	// before its end hooks run; final is its terminal event while they
	// run (it is published after them).
	ending Status
	final  *Event
}

// hooks is who is told about a message: its event listeners, what runs
// once it ends, and what its cancel does besides ending it.
type hooks struct {
	listeners map[int]func(Event)
	nextL     int
	onEnd     []func(*Message)
	onCancel  func()
}

// signals are the channels a message's readers wait on.
type signals struct {
	changed chan struct{} // closed and replaced on every change
	done    chan struct{}
	// resumed is closed once an instance of this host took the message
	// over from one that was cut off (Router.Resume found it here).
	resumed    chan struct{}
	resumeOnce sync.Once
}

func newMessage(id string, req Request, maxReply int, now func() time.Time) *Message {
	sum := sha256.Sum256([]byte(req.Content))
	return &Message{
		header: header{id: id, agent: req.Agent, session: req.Session, sender: req.Sender, key: req.IdempotencyKey,
			content: req.Content, audit: req.Audit, sha: hex.EncodeToString(sum[:]), accepted: now()},
		maxReply: maxReply, now: now,
		replyState: replyState{status: StatusQueued, size: len(req.Content)},
		signals:    signals{changed: make(chan struct{}), done: make(chan struct{}), resumed: make(chan struct{})},
	}
}

// ID is the message's id (a UUID), the id of its envelope and its reply.
func (m *Message) ID() string { return m.id }

// Agent is the agent the message is for.
func (m *Message) Agent() string { return m.agent }

// Session is the session it belongs to ("" for none).
func (m *Message) Session() string { return m.session }

// Sender is who sent it ("api", "mcp", "a2a", "agent:NAME").
func (m *Message) Sender() string { return m.sender }

// Content is the message's text.
func (m *Message) Content() string { return m.content }

// Audit reports whether its sender asked for the content in the audit log
// (Request.Audit: an agent's audit_arguments).
func (m *Message) Audit() bool { return m.audit }

// SHA256 is the hex sha256 of the content (for the audit log).
func (m *Message) SHA256() string { return m.sha }

// IdempotencyKey is the key it was sent with, "" for none.
func (m *Message) IdempotencyKey() string { return m.key }

// Done is closed once the reply has ended (replied, failed or cancelled).
func (m *Message) Done() <-chan struct{} { return m.done }

// Resumed is closed once an instance of this host took the message over
// from one that was cut off, keeping its reply so far (Router.Resume found
// it, fresh false): a durable agent's next instance, here, of one that ran
// here or, for a message forwarded here, on the host that died.
func (m *Message) Resumed() <-chan struct{} { return m.resumed }

// ReplyBytes is the bytes of reply text streamed so far (its deltas).
func (m *Message) ReplyBytes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.deltas)
}

// delivered marks the message handed to its instance (queued -> working).
func (m *Message) delivered() {
	m.mu.Lock()
	if m.status == StatusQueued && m.ending == "" {
		m.status = StatusWorking
		m.notifyLocked()
	}
	m.mu.Unlock()
}

// Delta streams more text of the reply. ErrCancelled once the sender
// cancelled it, ErrNotOpen once it ended otherwise, invalid-argument past
// the reply's size limit.
func (m *Message) Delta(text string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.openLocked(); err != nil {
		return err
	}
	if len(m.deltas)+len(text) > m.maxReply {
		return tooling.Errorf(tooling.CodeInvalidArgument, "reply to message %s is over %d bytes", m.id, m.maxReply)
	}
	if text == "" {
		return nil
	}
	if !m.hasFirst {
		m.hasFirst, m.firstDelta = true, m.now().Sub(m.accepted)
	}
	m.deltas = append(m.deltas, text...)
	m.appendLocked(Event{Kind: KindDelta, Text: text})
	return nil
}

// Reply ends the reply: its whole text is the deltas followed by content.
func (m *Message) Reply(content string) error {
	m.mu.Lock()
	if err := m.openLocked(); err != nil {
		m.mu.Unlock()
		return err
	}
	if len(m.deltas)+len(content) > m.maxReply {
		m.mu.Unlock()
		return tooling.Errorf(tooling.CodeInvalidArgument, "reply to message %s is over %d bytes", m.id, m.maxReply)
	}
	whole := string(m.deltas) + content
	m.deltas = nil
	return m.finishLocked(StatusDone, Event{Kind: KindReply, Text: whole})
}

// Fail ends the reply as a failure with code (CodeReplyError for the
// agent's own reply-error) and text.
func (m *Message) Fail(code, text string) error {
	m.mu.Lock()
	if err := m.openLocked(); err != nil {
		m.mu.Unlock()
		return err
	}
	m.deltas = nil
	return m.finishLocked(StatusFailed, Event{Kind: KindError, Code: code, Text: text})
}

// Cancel ends an open message as cancelled (an error event with code
// cancelled) and tells its instance. It reports whether it was open.
func (m *Message) Cancel() bool {
	m.mu.Lock()
	if m.ending != "" {
		m.mu.Unlock()
		return false
	}
	m.deltas = nil
	onCancel := m.onCancel
	_ = m.finishLocked(StatusCancelled, Event{Kind: KindError, Code: tooling.CodeCancelled.String(), Text: "the sender cancelled message " + m.id})
	if onCancel != nil {
		onCancel()
	}
	return true
}

// setOnCancel sets what Cancel does besides ending the message (the
// deliverer tells the instance); it runs at once if already cancelled.
func (m *Message) setOnCancel(f func()) {
	m.mu.Lock()
	cancelled := m.ending == StatusCancelled
	if !cancelled {
		m.onCancel = f
	}
	m.mu.Unlock()
	if cancelled {
		f()
	}
}

func (m *Message) openLocked() error {
	switch {
	case m.ending == StatusCancelled:
		return refuse(ErrCancelled, tooling.CodeCancelled, "message %s was cancelled by its sender", m.id)
	case m.ending != "":
		return refuse(ErrNotOpen, tooling.CodeInvalidArgument, "message %s already has its terminal reply", m.id)
	}
	return nil
}

func (m *Message) finishedLocked() bool {
	return m.status == StatusDone || m.status == StatusFailed || m.status == StatusCancelled
}

// finishLocked ends the reply with the terminal event: first the end
// hooks run (the audit line, the span's end, the ledger), unlocked, with
// the message ending (nothing more is appended, m.last is ev), and only
// then is ev published and the status set, so that a reader who sees the
// reply finds the message audited and its span among the traces.
func (m *Message) finishLocked(st Status, ev Event) error {
	m.ending = st
	m.finished = m.now()
	hooks := m.onEnd
	m.onEnd = nil
	if len(hooks) > 0 {
		m.final = &ev
		m.mu.Unlock()
		for _, h := range hooks {
			h(m)
		}
		m.mu.Lock()
		m.final = nil
	}
	m.status = st
	m.appendLocked(ev)
	close(m.done)
	m.mu.Unlock()
	return nil
}

// appendLocked numbers ev, keeps it, tells the listeners and wakes the
// readers.
func (m *Message) appendLocked(ev Event) {
	ev.Seq = uint64(len(m.events)) + 1
	m.events = append(m.events, ev)
	m.size += len(ev.Text)
	for _, l := range m.listeners {
		l(ev)
	}
	if ev.Terminal() {
		m.listeners = nil
	}
	m.notifyLocked()
}

func (m *Message) notifyLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// After returns the events numbered above seq, whether the reply has
// ended, and a channel closed at the next change (when it has not).
func (m *Message) After(seq uint64) (evs []Event, ended bool, changed <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if seq < uint64(len(m.events)) {
		evs = append(evs, m.events[seq:]...)
	}
	return evs, m.finishedLocked(), m.changed
}

// Subscribe calls f with every event of the reply, those already there
// first, in order, each exactly once; f runs with the message locked (it
// must not call the message back, nor block). The returned func stops
// further calls; none come after the terminal event.
func (m *Message) Subscribe(f func(Event)) (stop func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ev := range m.events {
		f(ev)
	}
	if m.finishedLocked() {
		return func() {}
	}
	if m.listeners == nil {
		m.listeners = map[int]func(Event){}
	}
	k := m.nextL
	m.nextL++
	m.listeners[k] = f
	return func() {
		m.mu.Lock()
		delete(m.listeners, k)
		m.mu.Unlock()
	}
}

// onFinish runs f once the reply has ended (at once if it has).
func (m *Message) onFinish(f func(*Message)) {
	m.mu.Lock()
	if m.ending != "" { // ended, or its hooks are running
		m.mu.Unlock()
		f(m)
		return
	}
	m.onEnd = append(m.onEnd, f)
	m.mu.Unlock()
}

// last is the last event (the terminal one once the reply ended).
func (m *Message) last() Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastLocked()
}

// replay ends a message made from a ledger's record with the recorded
// terminal event: a reply, or an error (cancelled when its code is).
func (m *Message) replay(ev Event) {
	st := StatusDone
	switch {
	case ev.Kind == KindReply:
	case ev.Code == tooling.CodeCancelled.String():
		st = StatusCancelled
	default:
		st = StatusFailed
	}
	m.mu.Lock()
	if m.ending != "" {
		m.mu.Unlock()
		return
	}
	_ = m.finishLocked(st, Event{Kind: ev.Kind, Text: ev.Text, Code: ev.Code})
}

func (m *Message) lastLocked() Event {
	if m.final != nil {
		return *m.final
	}
	if len(m.events) == 0 {
		return Event{}
	}
	return m.events[len(m.events)-1]
}

// timing is the message's time to its first delta and to its end.
func (m *Message) timing() (first time.Duration, hasFirst bool, total time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.firstDelta, m.hasFirst, m.finished.Sub(m.accepted)
}

// bytes is what the message holds: its content and its events' text.
func (m *Message) bytes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.final != nil {
		return m.size + len(m.final.Text)
	}
	return m.size
}

// outcome is the audit and metrics outcome of an ended message: ok, or the
// error event's code.
func (m *Message) outcome() (outcome, text string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	last := m.lastLocked()
	if last.Kind == KindError {
		return last.Code, last.Text
	}
	return "ok", ""
}

// finishedAt is when the reply ended (zero while open).
func (m *Message) finishedAt() (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.finished, m.finishedLocked()
}
