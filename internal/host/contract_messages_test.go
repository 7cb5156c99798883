package host

import (
	"context"
	"encoding/json"
	"errors"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// Contract tests of toolhost:agent@0.3.0's messages interface, on the
// probes built from this checkout (the 0.1.0 and 0.2.0 fixtures cannot
// receive messages: a message to one is refused). Messages go through a
// real message.Router to the agents of a msgWorld.

// msgWorld is the message.Agents of a test: its agents by name, each
// taking every sender.
type msgWorld struct {
	mu     sync.Mutex
	agents map[string]*Agent
	router *message.Router
}

func newMsgWorld() *msgWorld {
	w := &msgWorld{agents: map[string]*Agent{}}
	w.router = message.NewRouter(w, message.Options{})
	return w
}

func (w *msgWorld) Target(name string) (message.Target, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.agents[name]; !ok {
		return message.Target{}, message.Refuse(message.ErrUnknownAgent, tooling.CodeNotFound, "no agent %q", name)
	}
	return message.Target{Accepts: []string{"*"}}, nil
}

func (w *msgWorld) Deliver(_ context.Context, m *message.Message) error {
	w.mu.Lock()
	a := w.agents[m.Agent()]
	w.mu.Unlock()
	if !a.Receives() {
		return message.Refuse(message.ErrUnsupported, tooling.CodeUnsupported, "agent %q cannot receive messages", m.Agent())
	}
	return a.Mailbox().Put(m)
}

// start runs a probe named name in the world; sendsTo are the globs of
// the agents it may send to.
func (w *msgWorld) start(t *testing.T, s *suite, g guest, name string, sendsTo []string, steps ...step) *Agent {
	t.Helper()
	o := probeOpts{guest: g, name: name, messaging: contract.Messaging{Router: w.router, SendsTo: func(to string) bool {
		for _, p := range sendsTo {
			if ok, _ := path.Match(p, to); ok {
				return true
			}
		}
		return false
	}}}
	a := s.startProbe(t, o, steps...)
	w.mu.Lock()
	w.agents[name] = a
	w.mu.Unlock()
	return a
}

func (w *msgWorld) send(t *testing.T, to, session, content string) *message.Message {
	t.Helper()
	m, _, err := w.router.Send(context.Background(), message.Request{Agent: to, Session: session, Sender: "api", Content: content})
	if err != nil {
		t.Fatalf("send to %s: %v", to, err)
	}
	return m
}

func waitMessage(t *testing.T, m *message.Message) message.View {
	t.Helper()
	select {
	case <-m.Done():
	case <-time.After(60 * time.Second):
		t.Fatalf("message %s: no reply within 60s: %+v", m.ID(), m.View())
	}
	return m.View()
}

// TestMessageReceiveReply: a message reaches the agent as a message
// envelope (sender, session, content) under the message id; its deltas
// and reply reach the sender in order; a second terminal reply and a reply
// to an id that is no message are invalid-argument.
func TestMessageReceiveReply(t *testing.T) {
	forGuestsOf(t, currentGuests, func(t *testing.T, g guest) {
		s := env(t)
		w := newMsgWorld()
		a := w.start(t, s, g, "p", nil,
			step{"op": "recv-message", "as": "m", "timeout": 30000},
			step{"op": "reply-delta", "id": "m", "text": "a"},
			step{"op": "reply-delta", "id": "m", "text": "b"},
			step{"op": "reply", "id": "m", "content": "c"},
			step{"op": "reply", "id": "m", "content": "again"},
			step{"op": "reply-delta", "id": "00000000-0000-4000-8000-000000000009", "text": "x"},
			step{"op": "reply-error", "id": "m", "message": "late"},
		)
		m := w.send(t, "p", "s1", "hello")
		v := waitMessage(t, m)
		if v.Status != message.StatusDone || v.Reply != "abc" {
			t.Fatalf("reply %+v", v)
		}
		evs, _, _ := m.After(0)
		var kinds []string
		for _, ev := range evs {
			kinds = append(kinds, ev.Kind+":"+ev.Text)
		}
		if strings.Join(kinds, " ") != "delta:a delta:b reply:abc" {
			t.Fatalf("events %v", kinds)
		}
		rs := finish(t, a)
		checkSteps(t, rs, "*", "true", "true", "true", "err invalid-argument", "err invalid-argument", "err invalid-argument")
		got := okAs[struct {
			Got     envelope
			Skipped []envelope
		}](t, rs[0])
		var msg struct {
			Sender  string
			Session *string
			Content string
		}
		if err := json.Unmarshal(got.Got.Val, &msg); err != nil {
			t.Fatal(err)
		}
		if got.Got.ID != "m" || got.Got.Tag != "message" || msg.Sender != "api" || msg.Session == nil || *msg.Session != "s1" || msg.Content != "hello" {
			t.Fatalf("the guest saw %+v %+v", got.Got, msg)
		}
	})
}

// TestMessageAgentToAgent: an agent sends to another and follows the reply
// (reply-delta envelopes, then the whole reply); is-open holds until the
// reply or a cancel, and cancel is true once; sends_to, unknown agents and agents that cannot receive are
// refused before anything is delivered.
func TestMessageAgentToAgent(t *testing.T) {
	forGuestsOf(t, currentGuests, func(t *testing.T, g guest) {
		s := env(t)
		w := newMsgWorld()
		helper := w.start(t, s, g, "helper", nil, step{"op": "serve", "mode": "deltas", "count": 1})
		w.start(t, s, g, "silent", nil, step{"op": "serve", "mode": "silent"})
		old := s.host.Start(s.program(t, guestJS020.dir(), "probe"), probeOpts{name: "old"}.config(),
			probeInput(t, []step{{"op": "recv", "timeout": 30000}}))
		t.Cleanup(func() { old.Stop(); <-old.Done() })
		w.mu.Lock()
		w.agents["old"] = old
		w.mu.Unlock()
		boss := w.start(t, s, g, "boss", []string{"helper", "silent", "old", "nobody"},
			step{"op": "send", "to": "helper", "content": "two words", "session": "s", "as": "q"},
			step{"op": "recv-reply", "id": "q", "timeout": 30000},
			step{"op": "msg-is-open", "id": "q"},
			step{"op": "send", "to": "silent", "content": "never answered", "as": "n"},
			step{"op": "msg-is-open", "id": "n"},
			step{"op": "msg-cancel", "id": "n"},
			step{"op": "msg-is-open", "id": "n"},
			step{"op": "msg-cancel", "id": "n"},
			step{"op": "send", "to": "stranger", "content": "x"},
			step{"op": "send", "to": "nobody", "content": "x"},
			step{"op": "send", "to": "old", "content": "x"},
		)
		rs := finish(t, boss)
		checkSteps(t, rs, `"q"`, "*", "false", `"n"`, "true", "true", "false", "false", "err denied", "err not-found", "err unsupported")
		r := okAs[struct {
			Deltas int
			Text   string
			End    envelope
		}](t, rs[1])
		var whole string
		if err := json.Unmarshal(r.End.Val, &whole); err != nil {
			t.Fatal(err)
		}
		if r.Text != "two words" || r.End.Tag != "reply" || whole != "two words" || r.Deltas < 1 {
			t.Fatalf("the sender saw %+v (whole %q)", r, whole)
		}
		served := okAs[struct{ Handled int }](t, finish(t, helper)[0])
		if served.Handled != 1 {
			t.Fatalf("the helper handled %d messages", served.Handled)
		}
		if _, _, err := w.router.Send(context.Background(), message.Request{Agent: "old", Sender: "api", Content: "x"}); !errors.Is(err, message.ErrUnsupported) {
			t.Fatalf("a message to a 0.2.0 agent: %v", err)
		}
	})
}

// TestMessageCancelAndTrap: a sender's cancel reaches the handler as a
// cancelled error under the message id (its late reply is cancelled); a
// handler that traps mid-reply fails the message with its summary,
// never a hang.
func TestMessageCancelAndTrap(t *testing.T) {
	forGuestsOf(t, currentGuests, func(t *testing.T, g guest) {
		s := env(t)
		w := newMsgWorld()
		h := w.start(t, s, g, "h", nil,
			step{"op": "recv-message", "as": "m", "timeout": 30000},
			step{"op": "recv", "timeout": 30000},
			step{"op": "reply", "id": "m", "content": "late"},
		)
		m := w.send(t, "h", "", "work")
		// Cancel once the handler has the message (it waits in its second
		// recv): the cancel then arrives as an envelope of its own.
		testenv.Eventually(t, 30*time.Second, "the handler to receive the message", func() bool { return h.Inbox().Stats().Delivered >= 1 })
		if !m.Cancel() {
			t.Fatal("cancel of an open message")
		}
		rs := finish(t, h)
		checkSteps(t, rs, "*", "m error cancelled", "err cancelled")

		d := w.start(t, s, g, "d", nil, step{"op": "serve", "mode": "die"})
		m2 := w.send(t, "d", "", "partial")
		v := waitMessage(t, m2)
		if v.Status != message.StatusFailed || v.Error == nil || v.Error.Code != "unavailable" || v.Reply != "" {
			t.Fatalf("after the trap: %+v", v)
		}
		if !strings.Contains(v.Error.Message, "agent d") {
			t.Fatalf("the error does not say which agent: %q", v.Error.Message)
		}
		evs, _, _ := m2.After(0)
		if len(evs) != 2 || evs[0].Kind != message.KindDelta || evs[0].Text != "partial" {
			t.Fatalf("events %+v: the delta sent before the trap is kept", evs)
		}
		<-d.Done()
	})
}
