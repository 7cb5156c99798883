package message

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// agents is a real Agents: one instance (an inbox and its mailbox) per
// agent and session, as the daemon keeps them.
type agents struct {
	mu          sync.Mutex
	targets     map[string]Target
	unsupported map[string]bool
	capacity    int
	boxes       map[string]*instance
}

type instance struct {
	in *inbox.Inbox
	mb *Mailbox
}

func newAgents(capacity int, targets map[string]Target) *agents {
	return &agents{targets: targets, capacity: capacity, boxes: map[string]*instance{}, unsupported: map[string]bool{}}
}

func (a *agents) Target(name string) (Target, error) {
	t, ok := a.targets[name]
	if !ok {
		return Target{}, refuse(ErrUnknownAgent, tooling.CodeNotFound, "no agent %q", name)
	}
	return t, nil
}

func (a *agents) instance(agent, session string) *instance {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := agent + "/" + session
	if b, ok := a.boxes[k]; ok {
		return b
	}
	in := inbox.New(a.capacity)
	b := &instance{in: in, mb: NewMailbox(in, nil)}
	a.boxes[k] = b
	return b
}

func (a *agents) Deliver(_ context.Context, m *Message) error {
	if a.unsupported[m.Agent()] {
		return refuse(ErrUnsupported, tooling.CodeUnsupported, "agent %q cannot receive messages", m.Agent())
	}
	return a.instance(m.Agent(), m.Session()).mb.Put(m)
}

func everyone() Target { return Target{Accepts: []string{"*"}} }

func recvMessage(t *testing.T, in *inbox.Inbox) (string, inbox.Message) {
	t.Helper()
	d := 5 * time.Second
	env, ok := in.Recv(context.Background(), &d)
	if !ok {
		t.Fatal("no envelope")
	}
	msg, ok := env.Event.(inbox.Message)
	if !ok {
		t.Fatalf("envelope %s is a %T, not a message", env.ID, env.Event)
	}
	return env.ID, msg
}

func TestSendReply(t *testing.T) {
	a := newAgents(8, map[string]Target{"echo": everyone()})
	r := NewRouter(a, Options{})
	m, existing, err := r.Send(context.Background(), Request{Agent: "echo", Session: "s1", Sender: SenderAPI, Content: "hi"})
	if err != nil || existing {
		t.Fatalf("Send: %v existing=%v", err, existing)
	}
	b := a.instance("echo", "s1")
	id, msg := recvMessage(t, b.in)
	if id != m.ID() || msg.Content != "hi" || msg.Sender != "api" || msg.Session == nil || *msg.Session != "s1" {
		t.Fatalf("got %s %+v", id, msg)
	}
	if v := m.View(); v.Status != StatusWorking {
		t.Fatalf("status %s, want working", v.Status)
	}
	for _, d := range []string{"a", "b"} {
		if err := b.mb.Delta(id, d); err != nil {
			t.Fatal(err)
		}
	}
	if v := m.View(); v.Reply != "ab" {
		t.Fatalf("reply so far %q", v.Reply)
	}
	if err := b.mb.Reply(id, "c"); err != nil {
		t.Fatal(err)
	}
	<-m.Done()
	evs, ended, _ := m.After(0)
	if !ended || len(evs) != 3 {
		t.Fatalf("events %+v ended=%v", evs, ended)
	}
	if last := evs[2]; last.Kind != KindReply || last.Text != "abc" || last.Seq != 3 {
		t.Fatalf("terminal %+v", last)
	}
	// Resumption after event 1: the rest.
	rest, _, _ := m.After(1)
	if len(rest) != 2 || rest[0].Seq != 2 {
		t.Fatalf("after 1: %+v", rest)
	}
	v := m.View()
	if v.Status != StatusDone || v.Reply != "abc" || v.Error != nil || v.Events != 3 {
		t.Fatalf("view %+v", v)
	}
	if got, ok := r.Get("echo", m.ID()); !ok || got != m {
		t.Fatal("Get lost the message")
	}
	if _, ok := r.Get("other", m.ID()); ok {
		t.Fatal("Get found the message under another agent")
	}
}

func TestReplyErrors(t *testing.T) {
	a := newAgents(8, map[string]Target{"x": everyone()})
	r := NewRouter(a, Options{MaxReplyBytes: 4})
	send := func() (string, *Mailbox, *Message) {
		m, _, err := r.Send(context.Background(), Request{Agent: "x", Sender: SenderAPI, Content: "q"})
		if err != nil {
			t.Fatal(err)
		}
		b := a.instance("x", "")
		id, _ := recvMessage(t, b.in)
		return id, b.mb, m
	}
	codeOf := func(err error) tooling.ErrorCode { return tooling.AsError(err).Code }

	id, mb, _ := send()
	if err := mb.Reply(id, "done"); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"reply after reply": mb.Reply(id, "again"),
		"delta after reply": mb.Delta(id, "more"),
		"unknown id":        mb.Reply("00000000-0000-4000-8000-000000000001", "x"),
	} {
		if codeOf(err) != tooling.CodeInvalidArgument || !errors.Is(err, ErrNotOpen) {
			t.Errorf("%s: %v, want invalid-argument", name, err)
		}
	}

	id, mb, m := send()
	if err := mb.Delta(id, "12345"); codeOf(err) != tooling.CodeInvalidArgument {
		t.Errorf("delta past the reply limit: %v", err)
	}
	if err := mb.Fail(id, "no"); err != nil {
		t.Fatal(err)
	}
	if v := m.View(); v.Status != StatusFailed || v.Error == nil || v.Error.Code != CodeReplyError || v.Error.Message != "no" {
		t.Fatalf("view %+v", v)
	}

	// A cancelled message: the instance gets a cancelled error under its
	// id, and a reply is told cancelled.
	id, mb, m = send()
	if !m.Cancel() || m.Cancel() {
		t.Fatal("Cancel: want true once")
	}
	d := time.Second
	env, ok := a.instance("x", "").in.Recv(context.Background(), &d)
	if !ok || env.ID != id {
		t.Fatalf("no envelope for the cancel: %+v", env)
	}
	if e, ok := env.Event.(inbox.Error); !ok || e.Err.Code != tooling.CodeCancelled {
		t.Fatalf("cancel envelope %+v", env.Event)
	}
	if err := mb.Reply(id, "late"); codeOf(err) != tooling.CodeCancelled {
		t.Fatalf("reply to a cancelled message: %v", err)
	}
	if v := m.View(); v.Status != StatusCancelled {
		t.Fatalf("status %s", v.Status)
	}
}

func TestCancelUndelivered(t *testing.T) {
	a := newAgents(8, map[string]Target{"x": everyone()})
	r := NewRouter(a, Options{})
	m, _, err := r.Send(context.Background(), Request{Agent: "x", Sender: SenderAPI, Content: "q"})
	if err != nil {
		t.Fatal(err)
	}
	m.Cancel()
	in := a.instance("x", "").in
	if n := in.Pending(); n != 1 {
		t.Fatalf("pending %d, want the one envelope, now the cancel", n)
	}
	env, _ := in.TryRecv()
	if _, ok := env.Event.(inbox.Error); !ok || env.ID != m.ID() {
		t.Fatalf("got %+v, want the message turned into its cancel", env)
	}
}

func TestRefusals(t *testing.T) {
	a := newAgents(1, map[string]Target{
		"api-only": {Accepts: []string{"api"}, MaxMessageBytes: 4},
		"agents":   {Accepts: []string{"agent:r*"}},
		"old":      everyone(),
	})
	a.unsupported["old"] = true
	r := NewRouter(a, Options{})
	for _, tc := range []struct {
		name     string
		req      Request
		sentinel error
		code     tooling.ErrorCode
	}{
		{"unknown agent", Request{Agent: "nobody", Sender: "api"}, ErrUnknownAgent, tooling.CodeNotFound},
		{"sender not accepted", Request{Agent: "api-only", Sender: "mcp"}, ErrDenied, tooling.CodeDenied},
		{"agent glob", Request{Agent: "agents", Sender: "agent:writer"}, ErrDenied, tooling.CodeDenied},
		{"too large", Request{Agent: "api-only", Sender: "api", Content: "12345"}, ErrTooLarge, tooling.CodeInvalidArgument},
		{"unsupported", Request{Agent: "old", Sender: "api"}, ErrUnsupported, tooling.CodeUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := r.Send(context.Background(), tc.req)
			if !errors.Is(err, tc.sentinel) || tooling.AsError(err).Code != tc.code {
				t.Fatalf("got %v, want %v (%s)", err, tc.sentinel, tc.code)
			}
		})
	}
	if _, _, err := r.Send(context.Background(), Request{Agent: "agents", Sender: "agent:reader"}); err != nil {
		t.Fatalf("agent:reader matches agent:r*: %v", err)
	}
	// The inbox (capacity 1) now holds that message: the next is busy.
	if _, _, err := r.Send(context.Background(), Request{Agent: "agents", Sender: "agent:reader"}); !errors.Is(err, ErrBusy) {
		t.Fatalf("full inbox: %v", err)
	}
	if open, _, _ := r.Stats(); open != 1 {
		t.Fatalf("open %d: a refused message must not be kept", open)
	}
}

func TestIdempotency(t *testing.T) {
	a := newAgents(8, map[string]Target{"x": everyone(), "y": everyone()})
	r := NewRouter(a, Options{})
	send := func(agent, key string) (*Message, bool) {
		m, existing, err := r.Send(context.Background(), Request{Agent: agent, Sender: "api", Content: "q", IdempotencyKey: key})
		if err != nil {
			t.Fatal(err)
		}
		return m, existing
	}
	m1, ex1 := send("x", "k")
	m2, ex2 := send("x", "k")
	m3, _ := send("y", "k")
	m4, _ := send("x", "other")
	if ex1 || !ex2 || m1 != m2 {
		t.Fatal("a retry with the same key must return the first message")
	}
	if m3 == m1 || m4 == m1 {
		t.Fatal("keys are per agent and per key")
	}
	if n := a.instance("x", "").in.Pending(); n != 2 {
		t.Fatalf("x got %d messages, want 2 (the retry delivered nothing)", n)
	}
}

func TestRetention(t *testing.T) {
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	a := newAgents(100, map[string]Target{"x": everyone()})
	r := NewRouter(a, Options{Retention: time.Minute, MaxMessages: 3, Now: clock})
	b := a.instance("x", "")
	answer := func(m *Message) {
		t.Helper()
		if err := b.mb.Reply(m.ID(), "ok"); err != nil {
			t.Fatal(err)
		}
	}
	send := func(key string) (*Message, error) {
		m, _, err := r.Send(context.Background(), Request{Agent: "x", Sender: "api", Content: "q", IdempotencyKey: key})
		return m, err
	}
	m1, _ := send("k1")
	answer(m1)
	advance(30 * time.Second)
	if _, ok := r.Get("x", m1.ID()); !ok {
		t.Fatal("an ended message is kept for the retention window")
	}
	advance(31 * time.Second)
	if _, ok := r.Get("x", m1.ID()); ok {
		t.Fatal("kept past the retention window")
	}
	if m, _ := send("k1"); m == m1 {
		t.Fatal("a key past the retention window delivers again")
	}
	// Three open messages fill the table (the one just sent and two more):
	// a fourth is busy; once one ends, the oldest ended makes room.
	o2, _ := send("")
	if _, err := send(""); err != nil {
		t.Fatal(err)
	}
	if _, err := send(""); !errors.Is(err, ErrBusy) {
		t.Fatalf("over max messages with all open: %v", err)
	}
	answer(o2)
	if _, err := send(""); err != nil {
		t.Fatalf("an ended message makes room: %v", err)
	}
	if _, ok := r.Get("x", o2.ID()); ok {
		t.Fatal("the ended message should have been dropped for room")
	}
}

func TestOutbox(t *testing.T) {
	a := newAgents(8, map[string]Target{"helper": {Accepts: []string{"agent:*"}}})
	r := NewRouter(a, Options{})
	senderIn := inbox.New(8)
	o := NewOutbox(r, "boss", senderIn)
	defer o.Close()
	if _, err := o.Send(context.Background(), "helper", "x", "", false, false); !errors.Is(err, ErrDenied) {
		t.Fatalf("not allowed: %v", err)
	}
	id, err := o.Send(context.Background(), "helper", "question", "s", true, false)
	if err != nil {
		t.Fatal(err)
	}
	if !o.IsOpen(id) {
		t.Fatal("is-open after send")
	}
	h := a.instance("helper", "s")
	got, msg := recvMessage(t, h.in)
	if got != id || msg.Sender != "agent:boss" {
		t.Fatalf("helper got %s from %s", got, msg.Sender)
	}
	for _, d := range []string{"an", "swer"} {
		if err := h.mb.Delta(id, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.mb.Reply(id, "!"); err != nil {
		t.Fatal(err)
	}
	if o.IsOpen(id) {
		t.Fatal("is-open after the reply")
	}
	var text strings.Builder
	for {
		env, ok := senderIn.TryRecv()
		if !ok {
			t.Fatal("no reply envelope")
		}
		if env.ID != id {
			t.Fatalf("envelope for %s", env.ID)
		}
		if d, ok := env.Event.(inbox.ReplyDelta); ok {
			text.WriteString(d.Text)
			continue
		}
		rep, ok := env.Event.(inbox.Reply)
		if !ok || rep.Text != "answer!" || text.String() != "answer" {
			t.Fatalf("terminal %+v after deltas %q", env.Event, text.String())
		}
		break
	}

	// Cancel from the sender: the handler is told, the sender gets nothing.
	id2, err := o.Send(context.Background(), "helper", "again", "s", true, false)
	if err != nil {
		t.Fatal(err)
	}
	recvMessage(t, h.in)
	if !o.Cancel(id2) {
		t.Fatal("cancel of an open send")
	}
	if err := h.mb.Reply(id2, "late"); tooling.AsError(err).Code != tooling.CodeCancelled {
		t.Fatalf("reply after cancel: %v", err)
	}
	if n := senderIn.Pending(); n != 0 {
		t.Fatalf("sender got %d envelopes after cancel", n)
	}

	// The handler's instance ends: the sender gets unavailable.
	id3, err := o.Send(context.Background(), "helper", "third", "s", true, false)
	if err != nil {
		t.Fatal(err)
	}
	h.mb.Close(tooling.CodeUnavailable, "trap: unreachable")
	env, ok := senderIn.TryRecv()
	if e, isErr := env.Event.(inbox.Error); !ok || env.ID != id3 || !isErr || e.Err.Code != tooling.CodeUnavailable {
		t.Fatalf("after the handler ended: %+v", env)
	}
}

// TestEndHooksBeforeReaders: a message's end hooks (its audit line, its
// span's end) run before a reader can see its terminal event, with the
// message already closed to more events and its last event the terminal
// one; a hook added while they run runs at once.
func TestEndHooksBeforeReaders(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(m *Message)
		last Event
	}{
		{"reply", func(m *Message) { _ = m.Reply("done") }, Event{Kind: KindReply, Text: "part done"}},
		{"fail", func(m *Message) { _ = m.Fail("internal", "broke") }, Event{Kind: KindError, Code: "internal", Text: "broke"}},
		{"cancel", func(m *Message) { m.Cancel() }, Event{Kind: KindError, Code: "cancelled", Text: "the sender cancelled message m1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMessage("m1", Request{Agent: "a", Sender: "api", Content: "hi"}, 1<<20, time.Now)
			if err := m.Delta("part "); err != nil {
				t.Fatal(err)
			}
			var inHook struct {
				evs     int
				ended   bool
				last    Event
				deltaOK bool
				nested  bool
			}
			m.onFinish(func(m *Message) {
				evs, ended, _ := m.After(0)
				inHook.evs, inHook.ended, inHook.last = len(evs), ended, m.last()
				inHook.deltaOK = m.Delta("late") == nil
				m.onFinish(func(*Message) { inHook.nested = true })
			})
			tc.end(m)
			if inHook.evs != 1 || inHook.ended || inHook.deltaOK || !inHook.nested {
				t.Fatalf("in the hook: %d events, ended %v, a delta taken %v, a nested hook run %v; want 1, false, false, true",
					inHook.evs, inHook.ended, inHook.deltaOK, inHook.nested)
			}
			if l := inHook.last; l.Kind != tc.last.Kind || l.Code != tc.last.Code || l.Text != tc.last.Text {
				t.Fatalf("last event in the hook %+v, want %+v", l, tc.last)
			}
			evs, ended, _ := m.After(0)
			if !ended || len(evs) != 2 || evs[1].Seq != 2 || evs[1].Text != tc.last.Text {
				t.Fatalf("after: ended %v, events %+v", ended, evs)
			}
			select {
			case <-m.Done():
			default:
				t.Fatal("Done is open after the end")
			}
		})
	}
}
